#!/usr/bin/env node
/**
 * `controlplane build`: find or build the binaries (what `npm run setup` runs).
 * `controlplane version`: print the versions the binaries report.
 * (`npm run up` starts a plane with the operators: scripts/up.ts.)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { platform } from 'node:os';
import { join } from 'node:path';
import { resolveBinaries } from './binaries.ts';
import { sha256OfUrl } from './download.ts';
import { ControlPlaneError } from './errors.ts';
import { resolveNodeBinaries } from './node-binaries.ts';
import { COMPONENT_BINARIES, type Component, releaseLocation } from './releases.ts';

export const USAGE = `usage: controlplane COMMAND

  build       find the control-plane binaries (KUBEBUILDER_ASSETS, then the cache), and
              download (checked against a pinned sha256, else the release's published
              checksum file) or build with Go those that are missing, as
              KUBE_OPERATORS_BINARIES=auto|download|pinned|build says (default auto);
              then, on Linux, the node's (KUBE_OPERATORS_NODE_ASSETS, then the cache,
              else downloaded or built); prints where each one is
  checksums   download the official release files of the pinned versions for Linux
              amd64 and arm64 and print their sha256, to compare with the releases'
              published sums and paste into versions.ts (for maintainers bumping a version)
  version     print the versions the binaries report
  --version   print this package's version
  --help, -h  print this text

exit status: 0 done, 1 a binary could not be found or built (the message says why), 2 usage error
`;

async function main(argv: readonly string[]): Promise<number> {
  const [cmd] = argv;
  if (argv.length > 1) {
    process.stderr.write(`controlplane: unexpected argument ${argv[1]}\n${USAGE}`);
    return 2;
  }
  switch (cmd) {
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return 0;
    case '--version': {
      const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
        version: string;
      };
      process.stdout.write(`${pkg.version}\n`);
      return 0;
    }
    case 'build': {
      const b = await resolveBinaries();
      for (const [name, path] of Object.entries(b)) {
        process.stdout.write(`${name.padEnd(22)} ${path ?? '(none in KUBEBUILDER_ASSETS)'}\n`);
      }
      // After the plane's, which are printed and cached whatever happens to the node's build.
      if (platform() !== 'linux') {
        process.stdout.write(`(the node's binaries are not built: a node runs on Linux only)\n`);
        return 0;
      }
      const node = await resolveNodeBinaries((m) => process.stderr.write(`[controlplane] ${m}\n`));
      for (const [name, path] of Object.entries(node)) process.stdout.write(`${name.padEnd(22)} ${path}\n`);
      return 0;
    }
    case 'checksums': {
      for (const component of Object.keys(COMPONENT_BINARIES) as Component[]) {
        for (const binary of COMPONENT_BINARIES[component]) {
          process.stdout.write(`  '${binary}': {\n`);
          for (const platform of ['linux/amd64', 'linux/arm64'] as const) {
            const { url } = releaseLocation(component, binary, platform);
            const { sha256, bytes } = await sha256OfUrl(url, 300_000);
            process.stdout.write(`    '${platform}': '${sha256}', // ${url}, ${bytes} bytes\n`);
          }
          process.stdout.write('  },\n');
        }
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
      process.stdout.write(
        execFileSync(b.promtool, ['--version'], { encoding: 'utf8' }).split('\n')[0] + '\n',
      );
      return 0;
    }
    default:
      process.stderr.write(`controlplane: ${cmd ? `unknown command ${cmd}` : 'no command'}\n${USAGE}`);
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
