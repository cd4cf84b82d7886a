/**
 * Finds, downloads or builds kube-apiserver, kube-controller-manager, etcd, kubectl, helm
 * and promtool; and, through {@link obtain}, the node's kubelet, kube-proxy and kube-scheduler
 * (the `kubernetes-node` group, which node-binaries.ts resolves).
 *
 * Order of precedence, per binary:
 *  1. `KUBEBUILDER_ASSETS`, the envtest convention: a folder holding prebuilt binaries.
 *     envtest's folders hold no kube-controller-manager: when the folder provides
 *     kube-apiserver and kubectl, the controller manager is taken from there or not at
 *     all (never a build, never a cached one of another version), and only a plane
 *     that asks for it fails, saying so.
 *  2. The cache, `~/.cache/kube-operators-ts/bin/<component>-<version>/`, one folder per
 *     version so a bump never runs a stale binary.
 *  3. `KUBE_OPERATORS_BINARIES` (default `auto`) decides how a missing group arrives:
 *     `download` fetches the official release files of the pinned versions, each checked
 *     against the sha256 pinned in versions.ts or, where none is pinned, against the
 *     release's own published checksum file from the same host (seconds); `build`
 *     compiles them with Go from the module proxy (minutes); `auto` downloads and builds
 *     when the download is unavailable (no network, a proxy refusing, a host silent for a
 *     few seconds, a checksum file missing or malformed) or when neither a pin nor a
 *     published checksum exists for the platform, saying in one line which path it took
 *     and why; `pinned` is `auto` with pins alone as trust (what every release before
 *     issue 40 did): an unpinned group is built, no published file is read. A file that
 *     arrives and does not match its checksum, or a pin its release's published file
 *     contradicts, is an error in every mode: a wrong mirror, an altered file or a wrong
 *     pin is reported, never built around.
 *     Either way binaries are written under a work folder and renamed into the cache
 *     when complete, so an interrupted run never leaves something that looks cached; a
 *     lock keeps two test runs from fetching or building at once.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DownloadUnavailable, downloadRelease } from './download.ts';
import { ControlPlaneError } from './errors.ts';
import { isExecutable } from './executable.ts';
import { downloadModule, runGo } from './go.ts';
import { withLock } from './lock.ts';
import {
  type Checksums,
  COMPONENT_BINARIES,
  COMPONENT_VERSIONS,
  type Component,
  currentPlatform,
  releaseBase,
  releasePlan,
} from './releases.ts';
import {
  KUBERNETES_VERSION,
  type Platform,
  prometheusRelease,
  RELEASE_SHA256,
  stagingVersion,
} from './versions.ts';

const exec = promisify(execFile);

/** What a control plane runs, and the kubectl that talks to it. */
export interface PlaneBinaries {
  readonly kubeApiserver: string;
  /**
   * Run on request: garbage collection, namespace deletion, ClusterRole aggregation,
   * tokens. Undefined only when KUBEBUILDER_ASSETS provides the apiserver but not this.
   */
  readonly kubeControllerManager: string | undefined;
  readonly etcd: string;
  readonly kubectl: string;
}

/** The plane's binaries and the tools the tests check our charts with. */
export interface Binaries extends PlaneBinaries {
  readonly helm: string;
  /** Prometheus's rule checker, for the charts' PrometheusRules. */
  readonly promtool: string;
}

export type Log = (message: string) => void;

/** How a missing binary arrives: `KUBE_OPERATORS_BINARIES`. */
export type BinariesMode = 'auto' | 'download' | 'pinned' | 'build';

/** Builds one group from source into a folder (the Go path); replaceable in tests. */
export type Builder = (component: Component, version: string, dest: string, log: Log) => Promise<void>;

/** What the defaults can be replaced with: tests point these at a stand-in release host. */
export interface ObtainOptions {
  readonly mode?: BinariesMode;
  readonly platform?: Platform | undefined;
  /** Base URL per group; defaults to the mirror variables, then the official hosts. */
  readonly bases?: Partial<Record<Component, string>>;
  readonly checksums?: Checksums;
  readonly connectTimeoutMs?: number;
  readonly stallTimeoutMs?: number;
  readonly build?: Builder;
}

/** Seconds to wait for a release host's answer before `auto` builds instead. */
const CONNECT_TIMEOUT_MS = 5_000;
/** Seconds a download may go silent before it is abandoned. */
const STALL_TIMEOUT_MS = 30_000;

/** The root of everything this project caches on a machine. */
export function cacheRoot(): string {
  if (process.env.KUBE_OPERATORS_CACHE) return process.env.KUBE_OPERATORS_CACHE;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'kube-operators-ts');
}

/** `KUBE_OPERATORS_BINARIES`, checked: a typo is an error, not a silent `auto`. */
export function binariesMode(env: NodeJS.ProcessEnv = process.env): BinariesMode {
  const v = env.KUBE_OPERATORS_BINARIES;
  if (v === undefined || v === '' || v === 'auto') return 'auto';
  if (v === 'download' || v === 'pinned' || v === 'build') return v;
  throw new ControlPlaneError(
    `KUBE_OPERATORS_BINARIES is "${v}".`,
    'set it to auto (download, else build), download (never build), pinned (download only what versions.ts ' +
      'pins, build the rest) or build (never download), or unset it.',
  );
}

function cachedDir(component: Component, version: string): string {
  return join(cacheRoot(), 'bin', `${component}-${version}`);
}

/**
 * The cache folder of a group, after downloading or building it if any of its binaries
 * is missing there.
 */
export async function obtain(component: Component, log: Log, opts: ObtainOptions = {}): Promise<string> {
  const version = COMPONENT_VERSIONS[component];
  const dir = cachedDir(component, version);
  const names = COMPONENT_BINARIES[component];
  const complete = async (): Promise<boolean> =>
    (await Promise.all(names.map((n) => isExecutable(join(dir, n))))).every(Boolean);
  if (await complete()) return dir;
  await withLock(join(cacheRoot(), 'locks', `${component}-${version}`), log, async () => {
    if (!(await complete())) await fetchOrBuild(component, version, dir, log, opts);
  });
  return dir;
}

async function fetchOrBuild(
  component: Component,
  version: string,
  dest: string,
  log: Log,
  opts: ObtainOptions,
): Promise<void> {
  const mode = opts.mode ?? binariesMode();
  const build = opts.build ?? buildFromSource;
  const what = `${COMPONENT_BINARIES[component].join(', ')} ${version}`;
  if (mode === 'build') {
    log(`${what}: building from source (KUBE_OPERATORS_BINARIES=build)`);
    return build(component, version, dest, log);
  }
  const platform = 'platform' in opts ? opts.platform : currentPlatform();
  const base = opts.bases?.[component] ?? releaseBase(component);
  const plan = releasePlan(
    component,
    platform,
    base,
    opts.checksums ?? RELEASE_SHA256,
    mode === 'pinned' ? 'pinned-only' : 'pinned-or-published',
  );
  if (plan.kind === 'unverifiable') {
    if (mode === 'download') {
      throw new ControlPlaneError(
        `${what}: KUBE_OPERATORS_BINARIES=download, and nothing can verify a download: ${plan.why}.`,
        'pin the checksum (node packages/controlplane/src/cli.ts checksums prints it), or use auto or build.',
      );
    }
    log(`${what}: building from source, not downloading: ${plan.why}`);
    return build(component, version, dest, log);
  }
  const work = join(cacheRoot(), 'build', `${component}-${version}`, 'download');
  await rm(work, { recursive: true, force: true });
  try {
    log(`${what}: downloading from ${base}`);
    for (const file of plan.files) {
      await downloadRelease(file, work, {
        connectTimeoutMs: opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
        stallTimeoutMs: opts.stallTimeoutMs ?? STALL_TIMEOUT_MS,
        log,
      });
    }
    await checkComponent(component, version, work);
    await install(work, dest, COMPONENT_BINARIES[component]);
    log(`${what}: downloaded and verified into ${dest}`);
  } catch (err) {
    if (mode !== 'download' && err instanceof DownloadUnavailable) {
      log(`${what}: building from source, the download failed: ${err.message.split('\n')[0]}`);
      // Awaited here, not returned: a returned promise would be left unobserved while the
      // `finally` below runs, and a build that fails in that time is an unhandled
      // rejection, which ends the process instead of reaching the caller.
      return await build(component, version, dest, log);
    }
    throw err;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The version checks every cached binary passes, downloaded or built. */
async function checkComponent(component: Component, version: string, dir: string): Promise<void> {
  switch (component) {
    case 'kubernetes':
      await checkVersion(join(dir, 'kube-apiserver'), ['--version'], version);
      await checkVersion(join(dir, 'kube-controller-manager'), ['--version'], version);
      await checkVersion(join(dir, 'kubectl'), ['version', '--client'], version);
      return;
    case 'kubernetes-node':
      // Each prints `Kubernetes v1.36.3`, as the apiserver does.
      for (const b of COMPONENT_BINARIES['kubernetes-node'])
        await checkVersion(join(dir, b), ['--version'], version);
      return;
    case 'etcd':
      return checkVersion(join(dir, 'etcd'), ['--version'], version.replace(/^v/, ''));
    case 'helm':
      return checkVersion(join(dir, 'helm'), ['version', '--short'], version);
    case 'promtool':
      return checkVersion(join(dir, 'promtool'), ['--version'], prometheusRelease(version));
  }
}

/** The Go path: what `build` mode and `auto`'s fallback run. */
const buildFromSource: Builder = (component, version, dest, log) => {
  switch (component) {
    case 'kubernetes':
    case 'kubernetes-node':
      return buildKubernetes(component, version, dest, log);
    case 'etcd':
      return buildEtcd(version, dest, log);
    case 'helm':
      return buildHelm(version, dest, log);
    case 'promtool':
      return buildPromtool(version, dest, log);
  }
};

/**
 * Returns all six binaries, fetching or building what is missing. The first build takes
 * many minutes on two cores and reports progress through `log`; a download takes
 * seconds; later calls return in milliseconds.
 */
export async function resolveBinaries(log: Log = defaultLog, opts: ObtainOptions = {}): Promise<Binaries> {
  const plane = await resolvePlaneBinaries(log, opts);
  const helm = (await fromAssets('helm')) ?? join(await obtain('helm', log, opts), 'helm');
  const promtool = (await fromAssets('promtool')) ?? join(await obtain('promtool', log, opts), 'promtool');
  return { ...plane, helm, promtool };
}

/** A binary of the `KUBEBUILDER_ASSETS` folder, if it is set and holds that one. */
async function fromAssets(name: string): Promise<string | undefined> {
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (!assets) return undefined;
  const p = join(assets, name);
  return (await isExecutable(p)) ? p : undefined;
}

/**
 * Returns only what a control plane needs: kube-apiserver, kube-controller-manager, etcd
 * and kubectl. A plane never waits on helm or promtool, so on a new machine the tests and
 * `npm run up` start while those two are still being built beside them (the test run
 * prebuilds them; a test that needs one waits on its lock).
 */
export async function resolvePlaneBinaries(
  log: Log = defaultLog,
  opts: ObtainOptions = {},
): Promise<PlaneBinaries> {
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets && !existsSync(assets)) {
    throw new ControlPlaneError(
      `KUBEBUILDER_ASSETS names ${assets}, which does not exist.`,
      'point it at a folder holding kube-apiserver, etcd and kubectl, or unset it to build them with Go.',
    );
  }

  let kubeApiserver = await fromAssets('kube-apiserver');
  let kubectl = await fromAssets('kubectl');
  let kubeControllerManager = await fromAssets('kube-controller-manager');
  // The controller manager comes from where the apiserver comes from: a prebuilt
  // apiserver of unknown version next to a cached controller manager could be skewed.
  if (!kubeApiserver || !kubectl) {
    const k8sDir = await obtain('kubernetes', log, opts);
    kubeApiserver ??= join(k8sDir, 'kube-apiserver');
    kubectl ??= join(k8sDir, 'kubectl');
    kubeControllerManager ??= join(k8sDir, 'kube-controller-manager');
  }
  const etcd = (await fromAssets('etcd')) ?? join(await obtain('etcd', log, opts), 'etcd');
  return { kubeApiserver, kubeControllerManager, etcd, kubectl };
}

function defaultLog(message: string): void {
  process.stderr.write(`[controlplane] ${message}\n`);
}

/** A generated wrapper module: `go install` refuses modules with replace directives, a dependency's are ignored. */
async function wrapperModule(
  dir: string,
  name: string,
  requires: string,
  replaces: readonly string[],
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const replaceBlock = replaces.length ? `\nreplace (\n${replaces.map((r) => `\t${r}`).join('\n')}\n)\n` : '';
  await writeFile(
    join(dir, 'go.mod'),
    `module local/${name}\n\ngo 1.26.0\n\nrequire ${requires}\n${replaceBlock}`,
  );
  await rm(join(dir, 'go.sum'), { force: true });
}

/**
 * Reads the `=> ./staging/...` replace lines of kubernetes' own go.mod: the staging
 * modules it requires at v0.0.0 and that a dependent must map to real versions.
 */
export function stagingModules(goMod: string): string[] {
  const out: string[] = [];
  for (const line of goMod.split('\n')) {
    const m = /^\s*(k8s\.io\/[\w.-]+)\s*=>\s*\.\/staging\//.exec(line);
    if (m?.[1]) out.push(m[1]);
  }
  return out;
}

function versionLdflags(version: string): string {
  const m = /^v(\d+)\.(\d+)\./.exec(version);
  const flags = ['-s', '-w'];
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    flags.push(
      `-X ${pkg}.gitVersion=${version}`,
      `-X ${pkg}.gitMajor=${m?.[1]}`,
      `-X ${pkg}.gitMinor=${m?.[2]}`,
      `-X ${pkg}.gitTreeState=clean`,
      `-X ${pkg}.buildDate=2026-01-01T00:00:00Z`,
    );
  }
  return flags.join(' ');
}

/** Prints a line every 20 s while a long build runs: elapsed time and packages compiled. */
function progress(what: string, log: Log): { onLine: (l: string) => void; stop: () => void } {
  const started = Date.now();
  let packages = 0;
  const timer = setInterval(() => {
    const s = Math.round((Date.now() - started) / 1000);
    log(
      `${what}: ${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s, ${packages} packages compiled so far`,
    );
  }, 20_000);
  return {
    onLine: (l) => {
      if (l && !l.startsWith('#') && !l.startsWith('go: ')) packages++;
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * Builds a group of k8s.io/kubernetes commands (the plane's three, or the node's three) in
 * one `go build`, so they share its compiled packages, through a generated wrapper module
 * that maps the staging modules to their released versions, with the release's version
 * ldflags. Each group has its own work folder: the two may build at once under their own
 * locks.
 */
async function buildKubernetes(
  component: 'kubernetes' | 'kubernetes-node',
  version: string,
  dest: string,
  log: Log,
): Promise<void> {
  const binaries = COMPONENT_BINARIES[component];
  const what = `${binaries.join(', ')} ${version}`;
  log(
    `building ${what} with Go into ${dest}; the first build takes 10 to 25 minutes on two cores, later ` +
      'runs reuse it (set KUBEBUILDER_ASSETS or KUBE_OPERATORS_NODE_ASSETS to use prebuilt binaries instead)',
  );
  const work = join(cacheRoot(), 'build', `${component}-${version}`);
  const k8s = await downloadModule('k8s.io/kubernetes', version, tmpdir());
  const staging = stagingModules(await readFile(k8s.goMod, 'utf8'));
  if (staging.length === 0) {
    throw new ControlPlaneError(
      `k8s.io/kubernetes@${version}'s go.mod lists no staging modules; the wrapper cannot be generated.`,
      'check KUBERNETES_VERSION in packages/controlplane/src/versions.ts.',
    );
  }
  const sv = stagingVersion(version);
  await wrapperModule(
    work,
    `${component}-build`,
    `k8s.io/kubernetes ${version}`,
    staging.map((m) => `${m} => ${m} ${sv}`),
  );
  const pkgs = binaries.map((b) => `k8s.io/kubernetes/cmd/${b}`);
  await runGo(['get', ...pkgs.map((p) => `${p}@${version}`)], {
    cwd: work,
    purpose: `resolving the modules of ${what}`,
  });
  const out = join(work, 'out');
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const p = progress(`building ${binaries.join(', ')}`, log);
  try {
    await runGo(['build', '-v', '-o', `${out}/`, '-ldflags', versionLdflags(version), ...pkgs], {
      cwd: work,
      env: { CGO_ENABLED: '0' },
      onLine: p.onLine,
      purpose: `building ${what}`,
    });
  } finally {
    p.stop();
  }
  await checkComponent(component, version, out);
  await install(out, dest, binaries);
  log(`${what} are in ${dest}`);
}

async function buildEtcd(version: string, dest: string, log: Log): Promise<void> {
  log(`building etcd ${version} with Go into ${dest} (a few minutes the first time)`);
  const work = join(cacheRoot(), 'build', `etcd-${version}`);
  await wrapperModule(work, 'etcd-build', `go.etcd.io/etcd/server/v3 ${version}`, []);
  await runGo(['get', `go.etcd.io/etcd/server/v3@${version}`], {
    cwd: work,
    purpose: `resolving etcd ${version}`,
  });
  const out = join(work, 'out');
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const p = progress('building etcd', log);
  try {
    await runGo(
      [
        'build',
        '-v',
        '-o',
        join(out, 'etcd'),
        '-ldflags',
        `-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${version}`,
        'go.etcd.io/etcd/server/v3',
      ],
      { cwd: work, env: { CGO_ENABLED: '0' }, onLine: p.onLine, purpose: `building etcd ${version}` },
    );
  } finally {
    p.stop();
  }
  await checkComponent('etcd', version, out);
  await install(out, dest, ['etcd']);
}

async function buildHelm(version: string, dest: string, log: Log): Promise<void> {
  log(`building helm ${version} with Go into ${dest} (a few minutes the first time)`);
  const out = join(cacheRoot(), 'build', `helm-${version}`, 'out');
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const m = /^v1\.(\d+)\./.exec(KUBERNETES_VERSION);
  const ldflags = [
    '-s -w',
    `-X helm.sh/helm/v3/internal/version.version=${version}`,
    '-X helm.sh/helm/v3/internal/version.gitTreeState=clean',
    // Without these `helm template` assumes Kubernetes 1.20 in .Capabilities.
    '-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1',
    `-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${m?.[1]}`,
    '-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1',
    `-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${m?.[1]}`,
  ].join(' ');
  const p = progress('building helm', log);
  try {
    await runGo(['install', '-v', '-ldflags', ldflags, `helm.sh/helm/v3/cmd/helm@${version}`], {
      cwd: tmpdir(),
      env: { CGO_ENABLED: '0', GOBIN: out },
      onLine: p.onLine,
      purpose: `building helm ${version}`,
    });
  } finally {
    p.stop();
  }
  await checkComponent('helm', version, out);
  await install(out, dest, ['helm']);
}

async function buildPromtool(version: string, dest: string, log: Log): Promise<void> {
  log(`building promtool ${version} with Go into ${dest} (a few minutes the first time)`);
  const out = join(cacheRoot(), 'build', `promtool-${version}`, 'out');
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const release = prometheusRelease(version);
  const ldflags = [
    '-s -w',
    `-X github.com/prometheus/common/version.Version=${release}`,
    '-X github.com/prometheus/common/version.Branch=HEAD',
    '-X github.com/prometheus/common/version.BuildDate=20260101-00:00:00',
  ].join(' ');
  const p = progress('building promtool', log);
  try {
    await runGo(
      // remove_all_sd leaves out Prometheus's service discoveries (its plugins), which
      // `check rules` and `test rules` never use: a fifth fewer packages to compile.
      [
        'install',
        '-v',
        '-tags',
        'remove_all_sd',
        '-ldflags',
        ldflags,
        `github.com/prometheus/prometheus/cmd/promtool@${version}`,
      ],
      {
        cwd: tmpdir(),
        // -mod=mod: resolve the module's own requirements through the proxy, as `go install pkg@v` does.
        env: { CGO_ENABLED: '0', GOBIN: out, GOFLAGS: '-buildvcs=false -mod=mod' },
        onLine: p.onLine,
        purpose: `building promtool ${version}`,
      },
    );
  } finally {
    p.stop();
  }
  await checkComponent('promtool', version, out);
  await install(out, dest, ['promtool']);
}

/** A binary that does not report the version we built is not cached: better to fail now than run it. */
async function checkVersion(bin: string, args: string[], expected: string): Promise<void> {
  const { stdout, stderr } = await exec(bin, args);
  if (!`${stdout}${stderr}`.includes(expected)) {
    throw new ControlPlaneError(
      `${bin} ${args.join(' ')} printed "${(stdout + stderr).trim()}", not ${expected}.`,
      'the version ldflags did not apply; check packages/controlplane/src/binaries.ts.',
    );
  }
}

/** Moves finished binaries into their cache folder with a rename, atomic on one filesystem. */
async function install(from: string, dest: string, names: readonly string[]): Promise<void> {
  await mkdir(dest, { recursive: true });
  for (const n of names) await rename(join(from, n), join(dest, n));
}
