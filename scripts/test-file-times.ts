/**
 * A `node --test` reporter that writes, at the end of the run, how long each test file
 * took, longest first: which files dominate a run (issue 40 asks for it). `npm test` adds
 * it when `KUBE_OPERATORS_TEST_TIMES` names a file to write.
 *
 * The runner runs the files one at a time and hands a file's events on as it ends, so a
 * file's time is from the previous file's last event to its own last (its process start,
 * set-up and `before` hooks included, which no test's own duration counts; the first file
 * also carries the run's global set-up).
 */
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

interface TestEvent {
  readonly type: string;
  readonly data?: { readonly file?: string };
}

export default async function* fileTimes(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const started = performance.now();
  const lastSeen = new Map<string, number>();
  for await (const event of source) {
    // Not the enqueue events: the runner emits those for every file at the start.
    const file =
      event.type === 'test:enqueue' || event.type === 'test:dequeue' ? undefined : event.data?.file;
    if (file) lastSeen.set(file, performance.now());
  }
  const order = [...lastSeen.entries()].sort((a, b) => a[1] - b[1]);
  const rows = order.map(([file, end], i) => ({
    file: relative(process.cwd(), file),
    seconds: Math.round((end - (order[i - 1]?.[1] ?? started)) / 100) / 10,
  }));
  rows.sort((a, b) => b.seconds - a.seconds);
  const target = process.env.KUBE_OPERATORS_TEST_TIMES;
  if (target) writeFileSync(target, `${JSON.stringify(rows, null, 2)}\n`);
  yield '';
}
