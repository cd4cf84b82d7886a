/**
 * The binaries' download path (issue 17): `npm run bench -- binaries-download [--runs N]`.
 *
 * A cold set-up, timed: kube-apiserver, kube-controller-manager, kubectl, etcd, helm and
 * promtool fetched into an empty cache from a release host, verified against their
 * checksums, unpacked, version-checked and renamed into place, as `npm run setup` does
 * with `KUBE_OPERATORS_BINARIES=download`. The release hosts are not reachable from the
 * machine this was written on, so a stand-in serves the official layout: Python's
 * `http.server` in its own process, over files this bench makes from the cached binaries.
 *
 * Baseline, same files, same host, same machine: what a careful shell script does with C
 * tools, `curl -o`, `sha256sum -c`, `tar -xzf`, per file, one after the other. The ratio
 * is ours over the baseline's (the version checks, six short process runs, are ours
 * alone). Target from the issue: a cold set-up under 30 s on two cores, against the
 * 12 minutes of a build.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { freePort } from '@operators/controlplane/testing';
import { obtain, resolveBinaries } from '../packages/controlplane/src/binaries.ts';
import {
  type Checksums,
  COMPONENT_BINARIES,
  type Component,
  releaseLocation,
} from '../packages/controlplane/src/releases.ts';
import { RELEASE_SHA256 } from '../packages/controlplane/src/versions.ts';
import { median } from './support/median.ts';

const execFileP = promisify(execFile);
const TARGET_S = 30;
const PLATFORM = 'linux/amd64' as const;
const say = (s: string): void => {
  process.stdout.write(`${s}\n`);
};

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
const runs = Number(values.runs);

const real = await resolveBinaries(() => {});
const source: Record<string, string> = {
  'kube-apiserver': real.kubeApiserver,
  'kube-controller-manager': real.kubeControllerManager as string,
  kubectl: real.kubectl,
  etcd: real.etcd,
  helm: real.helm,
  promtool: real.promtool,
};

const work = await mkdtemp(join(tmpdir(), 'bench-download-'));
const root = join(work, 'host');
const staging = join(work, 'staging');
const components = Object.keys(COMPONENT_BINARIES) as Component[];
const checksums: Record<string, Record<string, string>> = {};
const files: { url: string; path: string; sha256: string; member?: string }[] = [];
let port = 0;
let server: ChildProcess | undefined;
try {
  port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  for (const k of Object.keys(RELEASE_SHA256)) checksums[k] = {};
  for (const component of components) {
    for (const binary of COMPONENT_BINARIES[component]) {
      const { url, member } = releaseLocation(component, binary, PLATFORM, base);
      const onHost = join(root, new URL(url).pathname);
      await mkdir(dirname(onHost), { recursive: true });
      if (member === undefined) {
        await copyFile(source[binary] as string, onHost);
      } else {
        await mkdir(join(staging, dirname(member)), { recursive: true });
        await copyFile(source[binary] as string, join(staging, member));
        await execFileP('tar', ['-czf', onHost, '-C', staging, member]);
      }
      const sum = (await execFileP('sha256sum', [onHost])).stdout.split(' ')[0] as string;
      (checksums[binary] as Record<string, string>)[PLATFORM] = sum;
      files.push({ url, path: onHost, sha256: sum, ...(member === undefined ? {} : { member }) });
    }
  }
  const total = (await execFileP('du', ['-sb', root])).stdout.split('\t')[0];
  say(
    `stand-in host: python3 -m http.server on ${base}, ${files.length} files, ${(Number(total) / 1e6).toFixed(0)} MB`,
  );
  server = spawn('python3', ['-m', 'http.server', '--bind', '127.0.0.1', String(port), '--directory', root], {
    stdio: 'ignore',
  });
  for (let i = 0; ; i++) {
    const ok = await fetch(base).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 100) throw new Error('the stand-in host did not start');
    await new Promise((r) => setTimeout(r, 100));
  }

  const ours: number[] = [];
  const baseline: number[] = [];
  for (let r = 0; r < runs; r++) {
    // Alternate which goes first, so neither always meets a warmer page cache.
    for (const which of r % 2 ? (['baseline', 'ours'] as const) : (['ours', 'baseline'] as const)) {
      const cache = await mkdtemp(join(work, `cache-${which}-`));
      const t0 = performance.now();
      if (which === 'ours') {
        process.env.KUBE_OPERATORS_CACHE = cache;
        for (const component of components) {
          await obtain(component, () => {}, {
            mode: 'download',
            platform: PLATFORM,
            bases: Object.fromEntries(components.map((c) => [c, base])),
            checksums: checksums as unknown as Checksums,
          });
        }
      } else {
        const script = files
          .map((f, i) => {
            const out = join(cache, `f${i}`);
            const check = `echo '${f.sha256}  ${out}' | sha256sum -c --quiet`;
            const unpack = f.member ? ` && tar -xzf ${out} -C ${cache} ${f.member}` : ` && chmod +x ${out}`;
            return `curl -fsS -o ${out} ${f.url} && ${check}${unpack}`;
          })
          .join(' && ');
        await execFileP('bash', ['-c', `set -e; ${script}`]);
      }
      const s = (performance.now() - t0) / 1000;
      (which === 'ours' ? ours : baseline).push(s);
      say(`run ${r + 1} ${which.padEnd(8)} ${s.toFixed(2)} s`);
      await rm(cache, { recursive: true, force: true });
    }
  }
  const m = median(ours);
  const b = median(baseline);
  say('');
  say(`cold set-up, download path: median ${m.toFixed(2)} s over ${runs} runs (target < ${TARGET_S} s)`);
  say(`baseline curl + sha256sum + tar: median ${b.toFixed(2)} s`);
  say(`ratio ours/baseline: ${(m / b).toFixed(2)}`);
  say(
    JSON.stringify({
      bench: 'binaries-download',
      runs,
      oursS: ours,
      baselineS: baseline,
      ratio: m / b,
      targetMet: m < TARGET_S,
    }),
  );
} finally {
  server?.kill();
  await rm(work, { recursive: true, force: true });
}
