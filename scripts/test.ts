/**
 * `npm test`: every test file of the repository in one `node --test` run, sharing one
 * control plane started by the global setup. Arguments narrow the run to matching
 * files (`npm test -- kit`).
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { lastToolNeeded } from './test-tools.ts';

const root = join(import.meta.dirname, '..');
const roots = ['packages', 'operators', 'scripts', 'e2e'];

function findTests(dir: string, out: string[]): void {
  for (const e of readdirSync(dir)) {
    if (e === 'node_modules' || e.startsWith('.')) continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) findTests(p, out);
    else if (e.endsWith('.test.ts')) out.push(relative(root, p));
  }
}

const files: string[] = [];
for (const r of roots) {
  try {
    findTests(join(root, r), files);
  } catch {
    // A root that does not exist yet.
  }
}
const filters = process.argv.slice(2);
// Files that need no tool beyond the plane first, then by the last tool they need, in the
// order the prebuild obtains them: on a new machine the tools build while the first files
// run instead of stalling them (node --test runs the files in this order, one at a time on
// two cores). With everything cached the order changes nothing else.
const selected = files
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort((a, b) => lastToolNeeded(a) - lastToolNeeded(b) || a.localeCompare(b));
if (selected.length === 0) {
  process.stderr.write(`no test files match ${filters.join(' ')}\n`);
  process.exit(1);
}

// The Go tools some tests need, built niced beside the run (see prebuild-test-tools.ts).
const prebuild = spawn(
  'nice',
  ['-n', '10', process.execPath, 'scripts/prebuild-test-tools.ts', ...selected],
  {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
  },
);
prebuild.on('error', () => undefined);

// Two runners side by side, each running its files one at a time. The second takes the
// node suite (e2e/: minutes of waiting on pods and helm, with a plane and a node of its
// own) and, before it, the permissions operator's files, which start planes of their own
// or use the runner's shared one: in series, the node suite alone would add five minutes
// to every run (issue 39), and the two lists take about as long as each other's share of
// the rest. Everything else runs in the first, in the order above.
const SECOND_RUNNER: readonly RegExp[] = [/^operators\/permissions\/test\//, /^e2e\//];
const second = SECOND_RUNNER.flatMap((r) => selected.filter((f) => r.test(f)));
const first = selected.filter((f) => !second.includes(f));
const timesFile = process.env.KUBE_OPERATORS_TEST_TIMES;

function runner(files: readonly string[], opts: { globalSetup: boolean; times: string | undefined }) {
  return spawn(
    process.execPath,
    [
      '--test',
      ...(opts.globalSetup ? ['--test-global-setup=packages/controlplane/src/global-setup.ts'] : []),
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      // Each file's time, longest first, into the file this variable names (issue 40).
      ...(opts.times
        ? ['--test-reporter=./scripts/test-file-times.ts', '--test-reporter-destination=stdout']
        : []),
      '--test-timeout=600000',
      ...files,
    ],
    {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, ...(opts.times ? { KUBE_OPERATORS_TEST_TIMES: opts.times } : {}) },
    },
  );
}

const children = [
  ...(first.length > 0 ? [runner(first, { globalSetup: true, times: timesFile })] : []),
  ...(second.length > 0
    ? [runner(second, { globalSetup: true, times: timesFile ? `${timesFile}.second.json` : undefined })]
    : []),
];
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    for (const c of children) c.kill(sig);
  });
}
// A filtered run may end before the prebuild: it finishes on its own (a build killed half-way
// would leave its lock to a process that is gone and its compiler still writing).
const codes = await Promise.all(
  children.map(
    (c) =>
      new Promise<number>((resolve) => c.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)))),
  ),
);
process.exit(codes.find((c) => c !== 0) ?? 0);
