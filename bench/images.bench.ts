/**
 * The images (issue 16): `npm run bench -- images [--runs N] [--skip-cold]`.
 *
 * - **Size**: every image of the catalog, compressed as a registry stores it (the sum of
 *   its manifest's layer sizes, read from the OCI layout), against the 120 MB target, and
 *   how much of it is in layers every image shares (pulled once per node).
 * - **Build**: `npm run images` for all of them with an empty layer cache (cold: the
 *   Debian base from the mirror, `npm ci --omit=dev`; npm's own download cache is left as
 *   it is) and again with that cache (warm: the node and app layers only). Baseline:
 *   `npm ci --omit=dev --ignore-scripts` alone into an empty folder, the step any Node
 *   image build has to take.
 * - **Start-up**: weebo-link's entrypoint (`run`) from exec to `/readyz` answering 200,
 *   against a local control plane, in the image (its unpacked root, a read-only bind
 *   mount, a tmpfs /tmp, `chroot` as 65532: what a container runtime sets up, less the
 *   runtime's own overhead) against the same command with the pinned node from the
 *   repository. Both get the same environment and an empty TMPDIR each run, so each
 *   starts with the cold compile cache a new pod has. Runs alternate; the medians and
 *   their ratio are reported, target ≤ 1.1.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { ControlPlane } from '@operators/controlplane';
import { ensureDebianPackages, freePort } from '@operators/controlplane/testing';
import { KubeClient } from '@operators/kit';
import { dependencyManifests } from '../packages/images/src/app.ts';
import { readManifest } from '../packages/images/src/build.ts';
import { IMAGES } from '../packages/images/src/catalog.ts';
import { median } from './support/median.ts';

const execFileP = promisify(execFile);
const repo = join(import.meta.dirname, '..');
const cli = join(repo, 'packages/images/src/cli.ts');
const SIZE_TARGET_MB = 120;
const STARTUP_TARGET = 1.1;

const say = (s: string): void => {
  process.stdout.write(`${s}\n`);
};
const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const seconds = async (f: () => Promise<unknown>): Promise<number> => {
  const t0 = performance.now();
  await f();
  return (performance.now() - t0) / 1000;
};

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    'skip-cold': { type: 'boolean', default: false },
  },
});
const runs = Number(values.runs);

await ensureDebianPackages(['mmdebstrap', 'umoci', 'skopeo']);
const work = await mkdtemp(join(tmpdir(), 'bench-images-'));
let failed = false;
try {
  // ---- build, cold then warm ----
  const out = join(work, 'out');
  const build = (env: NodeJS.ProcessEnv): Promise<number> =>
    seconds(() => execFileP(process.execPath, [cli, '--out', out], { env, maxBuffer: 64 << 20 }));
  let cold: number | undefined;
  let warm: number;
  if (values['skip-cold']) {
    say('build: cold skipped (--skip-cold); warm uses the layer cache in ~/.cache as it is');
    await build(process.env); // fills that cache if it was empty
    warm = await build(process.env);
  } else {
    const env = { ...process.env, KUBE_OPERATORS_CACHE: join(work, 'cache') };
    cold = await build(env);
    warm = await build(env);
  }
  // The baseline: npm ci of the same manifests, nothing else.
  const deps = join(work, 'npm-ci');
  for (const file of await dependencyManifests(repo)) {
    await mkdir(dirname(join(deps, file)), { recursive: true });
    await copyFile(join(repo, file), join(deps, file));
  }
  const npmCi = await seconds(() =>
    execFileP('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: deps,
      maxBuffer: 64 << 20,
    }),
  );
  say(`build of all ${IMAGES.length} images (npm run images, two cores):`);
  if (cold !== undefined)
    say(`  cold (empty layer cache):  ${cold.toFixed(1)} s  (${(cold / npmCi).toFixed(1)}× the baseline)`);
  say(`  warm (layer cache filled): ${warm.toFixed(1)} s  (${(warm / npmCi).toFixed(1)}× the baseline)`);
  say(`  baseline, npm ci --omit=dev --ignore-scripts of the same manifests alone: ${npmCi.toFixed(1)} s`);

  // ---- sizes, from the layouts ----
  const images: { name: string; tag: string; layers: readonly { digest: string; size: number }[] }[] = [];
  for (const name of (await readdir(out)).sort()) {
    const index = JSON.parse(await readFile(join(out, name, 'index.json'), 'utf8')) as {
      manifests: { annotations?: Record<string, string> }[];
    };
    const tag = index.manifests[0]?.annotations?.['org.opencontainers.image.ref.name'];
    if (!tag) continue;
    const { manifest } = await readManifest(join(out, name), tag);
    images.push({ name, tag, layers: manifest.layers });
  }
  say(`\nsize per image, compressed (target < ${SIZE_TARGET_MB} MB):`);
  for (const image of images) {
    const total = image.layers.reduce((n, l) => n + l.size, 0);
    const shared = image.layers
      .filter((l) => images.every((o) => o.layers.some((x) => x.digest === l.digest)))
      .reduce((n, l) => n + l.size, 0);
    const ok = total < SIZE_TARGET_MB * 1024 * 1024;
    if (!ok) failed = true;
    say(
      `  ${image.name.padEnd(22)} ${mb(total).padStart(9)}  (${mb(shared)} in layers every image shares, ${mb(total - shared)} its own)  ${ok ? 'ok' : 'OVER TARGET'}`,
    );
  }
  const distinct = new Map<string, number>();
  for (const image of images) for (const l of image.layers) distinct.set(l.digest, l.size);
  say(`  all ${images.length} on one node: ${mb([...distinct.values()].reduce((a, b) => a + b, 0))}`);

  // ---- start-up ----
  const weebo = images.find((i) => i.name === 'weebo-link');
  if (!weebo) throw new Error('no weebo-link image was built');
  const bundle = join(work, 'bundle');
  await execFileP('umoci', ['unpack', '--image', `${join(out, 'weebo-link')}:${weebo.tag}`, bundle]);
  const rootfs = join(bundle, 'rootfs');
  const config = JSON.parse(await readFile(join(bundle, 'config.json'), 'utf8')) as {
    process: { args: string[]; env: string[] };
  };
  const imageEnv = Object.fromEntries(
    config.process.env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );

  const plane = await ControlPlane.start({ log: () => {} });
  try {
    const admin = await KubeClient.load(plane.kubeconfigPath);
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench-images' } });
    await admin.transport.close();
    const kubeconfig = plane.kubeconfig();
    const runEnv = (tmp: string, port: number, metricsPort: number): Record<string, string> => ({
      ...imageEnv,
      TMPDIR: tmp,
      KUBECONFIG: join(tmp, 'kubeconfig'),
      POD_NAMESPACE: 'bench-images',
      LEADER_ELECTION: 'false',
      HEALTH_PORT: String(port),
      METRICS_SECURE: 'false',
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'warn',
    });
    const chroot = (await execFileP('sh', ['-c', 'command -v chroot'])).stdout.trim();

    /** Starts one weebo-link, waits for /readyz 200, stops it; the ms from spawn to 200. */
    const startOnce = async (inImage: boolean): Promise<number> => {
      const port = await freePort();
      const metricsPort = await freePort();
      const staged = await mkdtemp(join(tmpdir(), 'bench-images-tmp-'));
      await writeFile(join(staged, 'kubeconfig'), kubeconfig, { mode: 0o644 });
      let child: ChildProcess;
      const t0 = performance.now();
      if (inImage) {
        // The pod's view: read-only root, an emptyDir-like tmpfs /tmp holding the kubeconfig.
        const script =
          'set -e; root="$1"; staged="$2"; shift 2; mount --bind "$root" "$root"; mount -o remount,bind,ro "$root"; ' +
          'mount -t tmpfs tmpfs "$root/tmp"; cp -a "$staged/." "$root/tmp/"; chmod 1777 "$root/tmp"; ' +
          'exec env -i "$@"';
        const vars = Object.entries(runEnv('/tmp', port, metricsPort)).map(([k, v]) => `${k}=${v}`);
        const argv = [chroot, '--userspec=65532:65532', rootfs, ...config.process.args, 'run'];
        child = spawn('unshare', ['--mount', 'sh', '-c', script, 'sh', rootfs, staged, ...vars, ...argv], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
      } else {
        child = spawn(
          join(repo, 'node_modules/node/bin/node'),
          [join(repo, 'operators/weebo-link/bin/weebo-link.js'), 'run'],
          { env: runEnv(staged, port, metricsPort), stdio: ['ignore', 'ignore', 'pipe'] },
        );
      }
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      try {
        for (;;) {
          if (child.exitCode !== null) throw new Error(`weebo-link exited ${child.exitCode}: ${stderr}`);
          const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
            (r) => r.status === 200,
            () => false,
          );
          if (ok) return performance.now() - t0;
          if (performance.now() - t0 > 60_000) throw new Error(`not ready in 60 s: ${stderr}`);
          await new Promise((r) => setTimeout(r, 5));
        }
      } finally {
        child.kill('SIGTERM');
        await exited;
        await rm(staged, { recursive: true, force: true });
      }
    };

    // One of each first, not counted: the files of both in the page cache.
    await startOnce(false);
    await startOnce(true);
    const plain: number[] = [];
    const image: number[] = [];
    for (let i = 0; i < runs; i++) {
      // Alternate which goes first, so neither always follows the other.
      if (i % 2) {
        image.push(await startOnce(true));
        plain.push(await startOnce(false));
      } else {
        plain.push(await startOnce(false));
        image.push(await startOnce(true));
      }
    }
    const ratio = median(image) / median(plain);
    if (ratio > STARTUP_TARGET) failed = true;
    say(`\nstart-up of weebo-link run to /readyz 200 (median of ${runs}, alternating):`);
    say(`  in the image (chroot, read-only root, tmpfs /tmp, 65532): ${median(image).toFixed(0)} ms`);
    say(`  plain node from the repository:                         ${median(plain).toFixed(0)} ms`);
    say(
      `  ratio ${ratio.toFixed(2)} (target ≤ ${STARTUP_TARGET})${ratio > STARTUP_TARGET ? '  OVER TARGET' : ''}`,
    );
    say(
      `  runs: image ${image.map((x) => x.toFixed(0)).join(' ')}; plain ${plain.map((x) => x.toFixed(0)).join(' ')}`,
    );
  } finally {
    await plane.stop();
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
