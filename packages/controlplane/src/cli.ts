#!/usr/bin/env node
/**
 * `controlplane build`: find or build the binaries (the first step of README's commands).
 * `controlplane up`: start a control plane and keep it running until Ctrl-C.
 * `controlplane version`: print the versions the cached binaries report.
 */
import { execFileSync } from 'node:child_process';
import { resolveBinaries } from './binaries.ts';
import { ControlPlaneError } from './errors.ts';

async function main(argv: readonly string[]): Promise<number> {
  const [cmd] = argv;
  switch (cmd) {
    case 'build': {
      const b = await resolveBinaries();
      for (const [name, path] of Object.entries(b)) {
        process.stdout.write(`${name.padEnd(22)} ${path ?? '(none in KUBEBUILDER_ASSETS)'}\n`);
      }
      return 0;
    }
    case 'version': {
      const b = await resolveBinaries();
      process.stdout.write(execFileSync(b.kubeApiserver, ['--version'], { encoding: 'utf8' }));
      if (b.kubeControllerManager) {
        process.stdout.write(execFileSync(b.kubeControllerManager, ['--version'], { encoding: 'utf8' }));
      }
      process.stdout.write(execFileSync(b.etcd, ['--version'], { encoding: 'utf8' }).split('\n')[0] + '\n');
      process.stdout.write(execFileSync(b.helm, ['version', '--short'], { encoding: 'utf8' }));
      return 0;
    }
    default:
      process.stderr.write('usage: controlplane build|version\n');
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      err instanceof ControlPlaneError ? `error: ${err.message}\n` : `${(err as Error).stack}\n`,
    );
    process.exit(1);
  },
);
