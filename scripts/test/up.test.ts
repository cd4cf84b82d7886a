/**
 * `npm run up`'s last minute, tried as a user does it: Ctrl-C in the terminal. A terminal
 * sends SIGINT to the whole foreground process group, so the test does the same
 * (`kill(-pgid)`), then checks that the run ends within 5 s and leaves no process of the
 * plane or of the operators behind, nor the plane's folder, nor the kubeconfig.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

const root = join(import.meta.dirname, '..', '..');

/** Every live process whose parent chain reaches `pid`, read from /proc (children are in their own groups). */
function descendants(pid: number): { pid: number; cmdline: string[] }[] {
  const parents = new Map<number, number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces: fields start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      parents.set(Number(e), Number(fields[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const out: { pid: number; cmdline: string[] }[] = [];
  for (const p of parents.keys()) {
    let q: number | undefined = parents.get(p);
    while (q !== undefined && q > 1 && q !== pid) q = parents.get(q);
    if (q !== pid) continue;
    try {
      out.push({ pid: p, cmdline: readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0') });
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

function aliveAndNotZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

interface Running {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
  readonly dir: string;
}

/** Starts `node scripts/up.ts` as a terminal would start a job: leader of its own process group. */
async function up(): Promise<Running> {
  const dir = await mkdtemp(join(tmpdir(), 'up-test-'));
  const child = spawn(process.execPath, ['scripts/up.ts'], {
    cwd: root,
    detached: true,
    env: { ...process.env, KUBE_OPERATORS_UP_DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 300_000;
  while (!out.includes('Ctrl-C stops everything')) {
    if (child.exitCode !== null) assert.fail(`npm run up exited early:\n${out}`);
    if (Date.now() > deadline) {
      process.kill(-(child.pid as number), 'SIGKILL');
      assert.fail(`npm run up was not ready within 300 s:\n${out}`);
    }
    await sleep(100);
  }
  return { child, output: () => out, exited, dir };
}

function planeFolder(procs: { cmdline: string[] }[]): string {
  for (const p of procs) {
    // etcd's data folder lies in the plane's folder.
    const eq = p.cmdline.find((a) => a.startsWith('--data-dir='));
    if (eq) return dirname(eq.slice('--data-dir='.length));
  }
  assert.fail(`no etcd among ${procs.map((p) => p.cmdline.join(' ')).join('\n')}`);
}

/** A failed assertion must not leave a plane running: its children die with `up` (pdeathsig). */
function killIfAlive(run: Running): void {
  if (run.child.exitCode === null && run.child.signalCode === null) {
    try {
      process.kill(-(run.child.pid as number), 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/**
 * Starts `up`, sends SIGINT to its whole group `presses` times (50 ms apart, as a user
 * pressing Ctrl-C again), and checks the exit code, the time, and that nothing is left.
 */
async function interrupt(
  t: TestContext,
  presses: 1 | 2,
  expected: { code: number; withinMs: number },
): Promise<void> {
  const run = await up();
  t.after(() => killIfAlive(run));
  const pid = run.child.pid as number;
  const procs = descendants(pid);
  const names = procs.map((p) => p.cmdline.join(' '));
  assert.ok(
    names.some((n) => n.includes('kube-apiserver')),
    `kube-apiserver runs: ${names.join('\n')}`,
  );
  const folder = planeFolder(procs);
  const started = Date.now();
  for (let i = 0; i < presses; i++) {
    if (i > 0) await sleep(50);
    process.kill(-pid, 'SIGINT');
  }
  const code = await run.exited;
  const took = Date.now() - started;
  t.diagnostic(`${presses} Ctrl-C: exited in ${took} ms`);
  assert.equal(code, expected.code, run.output());
  assert.ok(took < expected.withinMs, `exited in ${took} ms:\n${run.output()}`);
  await sleep(200);
  assert.deepEqual(
    procs.filter((p) => aliveAndNotZombie(p.pid)).map((p) => p.cmdline.join(' ')),
    [],
    'no process of the run is left',
  );
  assert.equal(existsSync(folder), false, `the plane's folder ${folder} is removed`);
  assert.equal(existsSync(join(run.dir, 'kubeconfig')), false, 'the kubeconfig is removed');
  await rm(run.dir, { recursive: true, force: true });
}

// Side by side: each run has its own folder, plane and ports (0), and the minute of two
// start-ups one after the other bought nothing the second run proves.
describe('npm run up, interrupted from a terminal', { concurrency: 2 }, () => {
  it('one Ctrl-C to the whole process group stops the operators and the plane within 5 s, leaving nothing behind', async (t) => {
    await interrupt(t, 1, { code: 0, withinMs: 5_000 });
  });

  it('a second Ctrl-C while stopping kills everything at once, leaving nothing behind', async (t) => {
    await interrupt(t, 2, { code: 130, withinMs: 2_000 });
  });
});
