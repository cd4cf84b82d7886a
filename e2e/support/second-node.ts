/**
 * A second process that tries to start a plane with a node, as a second `npm run up --
 * --node` or a second test run on the same machine would. Run by the suite to check the
 * node's "one per machine, never beside a foreign kubelet" refusals from outside the
 * process that owns the node.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export interface SecondStart {
  /** 3: refused with a ControlPlaneError; 0: it started (the refusal failed). */
  readonly code: number | null;
  readonly output: string;
}

const script = `
import { ControlPlane, ControlPlaneError, resolveNodeBinaries } from '@operators/controlplane';
const quiet = () => undefined;
try {
  const binaries = await resolveNodeBinaries(quiet);
  // The refusals come before the sandbox image is read: an archive that is not there
  // keeps a start that was not refused from going far.
  const plane = await ControlPlane.start({
    log: quiet,
    node: { binaries, sandboxImage: { name: 'localhost/not-used:0', archive: '/nonexistent/pause.tar' } },
  });
  process.stdout.write('started ' + plane.url + '\\n');
  await plane.stop();
  process.exit(0);
} catch (err) {
  process.stdout.write(err instanceof Error ? err.message : String(err));
  process.exit(err instanceof ControlPlaneError ? 3 : 1);
}
`;

/** Runs the attempt in a new Node process in the repository (where the workspace resolves). */
export function startSecondNode(): Promise<SecondStart> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..', '..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    for (const s of [child.stdout, child.stderr]) {
      s.setEncoding('utf8').on('data', (d: string) => {
        output += d;
      });
    }
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}
