/**
 * Everything a node runs, found or built into the project's cache: kubelet, kube-proxy and
 * kube-scheduler; containerd with ctr and its runc shim; the CNI plugins; CoreDNS; the
 * sandbox image's pause binary; Debian's runc (and iptables and conntrack, which kube-proxy
 * calls from PATH).
 *
 * Order of precedence, per binary:
 *  1. `KUBE_OPERATORS_NODE_ASSETS`, a folder of prebuilt binaries (the `KUBEBUILDER_ASSETS`
 *     convention, for the node): a binary found there by its name (`kubelet`, `kube-proxy`,
 *     `kube-scheduler`, `containerd`, `ctr`, `containerd-shim-runc-v2`, `coredns`, `pause`,
 *     `runc`) is used instead of the cache. The CNI plugins are taken from it only when it
 *     holds all four (`bridge`, `host-local`, `loopback`, `portmap`): the node's CNI
 *     configuration names one folder for them. A group wholly provided there is never
 *     built. The versions of prebuilt binaries are not checked: that is the caller's choice.
 *  2. The cache, `~/.cache/kube-operators-ts/bin/<group>-<version>/`, one folder per version.
 *  3. Otherwise obtained, under a lock, into a work folder renamed into the cache when complete:
 *     - kubelet, kube-proxy, kube-scheduler: the `kubernetes-node` group of binaries.ts,
 *       downloaded from dl.k8s.io like kube-apiserver (same mirror variable,
 *       `KUBE_OPERATORS_KUBERNETES_RELEASES`, and same `KUBE_OPERATORS_BINARIES` modes), or
 *       built by the same wrapper module and version ldflags.
 *     - containerd, the CNI plugins and CoreDNS are built with Go from the module proxy
 *       (go-tool.ts), never downloaded: dl.k8s.io does not serve them, their GitHub release
 *       files would add three more hosts, mirrors and sets of pins to trust, while the
 *       module proxy, which every build here already trusts, serves them with go.sum's
 *       checksum database behind it; warm, the three take under two minutes.
 *     - pause: compiled with the machine's gcc, statically, from
 *       `build/pause/linux/pause.c` of the k8s.io/kubernetes module, as its Makefile does.
 *     - runc, iptables, conntrack: Debian packages (debian-packages.ts).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot, type Log, obtain } from './binaries.ts';
import { ensureDebianPackages } from './debian-packages.ts';
import { ControlPlaneError } from './errors.ts';
import { isExecutable } from './executable.ts';
import { downloadModule } from './go.ts';
import { type GoModuleTool, goModuleTool } from './go-tool.ts';
import { withLock } from './lock.ts';
import { COMPONENT_BINARIES } from './releases.ts';
import {
  CNI_PLUGINS_VERSION,
  CONTAINERD_VERSION,
  COREDNS_VERSION,
  KUBERNETES_VERSION,
  PAUSE_VERSION,
} from './versions.ts';

const exec = promisify(execFile);

/** Everything a node runs, each an absolute path to an executable. */
export interface NodeBinaries {
  readonly kubelet: string;
  readonly kubeProxy: string;
  readonly kubeScheduler: string;
  readonly containerd: string;
  readonly ctr: string;
  /** containerd-shim-runc-v2; its folder must be on containerd's PATH. */
  readonly containerdShim: string;
  /** The folder holding the CNI plugins bridge, host-local, loopback and portmap. */
  readonly cniBinDir: string;
  readonly coredns: string;
  /** The pause binary (static), for the sandbox image. */
  readonly pause: string;
  /** Debian's runc (package runc). */
  readonly runc: string;
}

/** The variable naming a folder of prebuilt node binaries. */
export const NODE_ASSETS_ENV = 'KUBE_OPERATORS_NODE_ASSETS';

/** The CNI plugins the node's network configuration uses. */
export const CNI_PLUGINS = ['bridge', 'host-local', 'loopback', 'portmap'] as const;

/** The folder of each plugin in the plugins module (its release script builds plugins/{main,ipam,meta}/*). */
const CNI_PLUGIN_FOLDERS: Readonly<Record<(typeof CNI_PLUGINS)[number], string>> = {
  bridge: 'main',
  'host-local': 'ipam',
  loopback: 'main',
  portmap: 'meta',
};

/** Where Debian's runc package installs the binary (`dpkg -L runc`; /usr/bin/runc links to it). */
const DEBIAN_RUNC = '/usr/sbin/runc';

/** containerd's three, with the version a release build links in (its Makefile's `-X …/version.Version`). */
export const CONTAINERD_TOOL: GoModuleTool = {
  name: 'containerd',
  version: CONTAINERD_VERSION,
  ldflags: [`-X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION}`],
  commands: [
    {
      name: 'containerd',
      pkg: 'github.com/containerd/containerd/v2/cmd/containerd',
      versionArgs: ['--version'],
      // `containerd github.com/containerd/containerd/v2 v2.4.2 `
      versionMatches: (stdout) => stdout.includes(` ${CONTAINERD_VERSION}`),
    },
    {
      name: 'ctr',
      pkg: 'github.com/containerd/containerd/v2/cmd/ctr',
      versionArgs: ['--version'],
      // `ctr github.com/containerd/containerd/v2 v2.4.2`
      versionMatches: (stdout) => stdout.includes(` ${CONTAINERD_VERSION}`),
    },
    {
      name: 'containerd-shim-runc-v2',
      pkg: 'github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2',
      versionArgs: ['-v'],
      // `containerd-shim-runc-v2:\n  Version:  v2.4.2\n …`
      versionMatches: (stdout) =>
        new RegExp(`^\\s*Version:\\s+${escapeRegExp(CONTAINERD_VERSION)}$`, 'm').test(stdout),
    },
  ],
};

/**
 * The four CNI plugins, with the version their release script links in
 * (`-X …/buildversion.BuildVersion`). `CNI_COMMAND=VERSION` answers only the CNI spec
 * versions (`{"cniVersion":"1.1.0","supportedVersions":[…]}`), the same for every release;
 * run with CNI_COMMAND empty, each prints its "about" line, `CNI bridge plugin v1.10.0`, on
 * stderr and exits 0: that is the check.
 */
export const CNI_PLUGINS_TOOL: GoModuleTool = {
  name: 'cni-plugins',
  version: CNI_PLUGINS_VERSION,
  ldflags: [
    `-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=${CNI_PLUGINS_VERSION}`,
  ],
  commands: CNI_PLUGINS.map((name) => ({
    name,
    pkg: `github.com/containernetworking/plugins/plugins/${CNI_PLUGIN_FOLDERS[name]}/${name}`,
    versionArgs: [],
    versionEnv: { CNI_COMMAND: '' },
    versionMatches: (_stdout: string, stderr: string) =>
      stderr.split('\n').includes(`CNI ${name} plugin ${CNI_PLUGINS_VERSION}`),
  })),
};

/** CoreDNS, whose module root is its command; `coredns -version` prints `CoreDNS-1.15.0`. */
export const COREDNS_TOOL: GoModuleTool = {
  name: 'coredns',
  version: COREDNS_VERSION,
  commands: [
    {
      name: 'coredns',
      pkg: 'github.com/coredns/coredns',
      versionArgs: ['-version'],
      versionMatches: (stdout) =>
        new RegExp(`^CoreDNS-${escapeRegExp(COREDNS_VERSION.replace(/^v/, ''))}$`, 'm').test(stdout),
    },
  ],
};

/**
 * Returns every binary a node runs, building or installing what is missing: on a new
 * machine several minutes of compiling after the plane's build (CoreDNS is the longest),
 * then well under a second.
 * Linux only: a node needs namespaces, cgroups and iptables.
 */
export async function resolveNodeBinaries(log: Log): Promise<NodeBinaries> {
  if (platform() !== 'linux') {
    throw new ControlPlaneError(
      `a node runs on Linux only, not ${platform()}.`,
      'run the node tests in a Linux machine or container.',
    );
  }
  const assets = process.env[NODE_ASSETS_ENV];
  if (assets && !existsSync(assets)) {
    throw new ControlPlaneError(
      `${NODE_ASSETS_ENV} names ${assets}, which does not exist.`,
      'point it at a folder of prebuilt node binaries, or unset it to build them.',
    );
  }
  const prebuilt = async (name: string): Promise<string | undefined> => {
    if (!assets) return undefined;
    const p = join(assets, name);
    return (await isExecutable(p)) ? p : undefined;
  };

  // kube-proxy calls iptables and conntrack from PATH whatever provides runc.
  const runcPrebuilt = await prebuilt('runc');
  await ensureDebianPackages(runcPrebuilt ? ['iptables', 'conntrack'] : ['runc', 'iptables', 'conntrack']);
  const runc = runcPrebuilt ?? DEBIAN_RUNC;
  if (!(await isExecutable(runc))) {
    throw new ControlPlaneError(
      `the runc package is installed but ${runc} is not an executable.`,
      'reinstall it (apt-get install --reinstall runc), or put a runc in KUBE_OPERATORS_NODE_ASSETS.',
    );
  }

  const pause = (await prebuilt('pause')) ?? (await pauseBinary(log));

  const cniPrebuilt = (await Promise.all(CNI_PLUGINS.map(prebuilt))).every((p) => p !== undefined);
  const cniBinDir = cniPrebuilt && assets ? assets : await goModuleTool(CNI_PLUGINS_TOOL, log);

  const coredns = (await prebuilt('coredns')) ?? join(await goModuleTool(COREDNS_TOOL, log), 'coredns');

  const fromGroup = async (
    names: readonly string[],
    folder: () => Promise<string>,
  ): Promise<readonly string[]> => {
    const found = await Promise.all(names.map(prebuilt));
    if (found.every((p) => p !== undefined)) return found as string[];
    const dir = await folder();
    return names.map((n, i) => found[i] ?? join(dir, n));
  };
  const [containerd, ctr, containerdShim] = (await fromGroup(
    CONTAINERD_TOOL.commands.map((c) => c.name),
    () => goModuleTool(CONTAINERD_TOOL, log),
  )) as [string, string, string];
  const [kubelet, kubeProxy, kubeScheduler] = (await fromGroup(COMPONENT_BINARIES['kubernetes-node'], () =>
    obtain('kubernetes-node', log),
  )) as [string, string, string];

  return {
    kubelet,
    kubeProxy,
    kubeScheduler,
    containerd,
    ctr,
    containerdShim,
    cniBinDir,
    coredns,
    pause,
    runc,
  };
}

/** The `-DVERSION` of pause.c, as `build/pause/Makefile` writes it: `v$(TAG)-$(REV)`, REV the git tag. */
const PAUSE_BUILD_VERSION = `${PAUSE_VERSION}-${KUBERNETES_VERSION}`;

/** The cached pause binary, compiling it first (a second) if missing. */
async function pauseBinary(log: Log): Promise<string> {
  const dir = join(cacheRoot(), 'bin', `pause-${PAUSE_VERSION}`);
  const bin = join(dir, 'pause');
  if (await isExecutable(bin)) return bin;
  await withLock(join(cacheRoot(), 'locks', `pause-${PAUSE_VERSION}`), log, async () => {
    if (await isExecutable(bin)) return;
    await ensureDebianPackages(['gcc', 'libc6-dev']);
    const k8s = await downloadModule('k8s.io/kubernetes', KUBERNETES_VERSION, tmpdir());
    const source = join(k8s.dir, 'build', 'pause', 'linux', 'pause.c');
    const makefile = await readFile(join(k8s.dir, 'build', 'pause', 'Makefile'), 'utf8').catch(() => '');
    const tag = /^TAG \?= (\S+)$/m.exec(makefile)?.[1];
    if (!existsSync(source) || `v${tag}` !== PAUSE_VERSION) {
      throw new ControlPlaneError(
        `k8s.io/kubernetes@${KUBERNETES_VERSION} has ${existsSync(source) ? `pause ${tag ?? '(no TAG)'}` : 'no build/pause/linux/pause.c'}, not pause ${PAUSE_VERSION}.`,
        'set PAUSE_VERSION in packages/controlplane/src/versions.ts to the TAG of its build/pause/Makefile.',
      );
    }
    const work = join(cacheRoot(), 'build', `pause-${PAUSE_VERSION}`);
    await rm(work, { recursive: true, force: true });
    await mkdir(work, { recursive: true });
    // The Makefile's CFLAGS: static, so the sandbox image holds this one file.
    await exec('gcc', [
      '-Os',
      '-Wall',
      '-Werror',
      '-static',
      `-DVERSION=${PAUSE_BUILD_VERSION}`,
      '-o',
      join(work, 'pause'),
      source,
    ]);
    const { stdout } = await exec(join(work, 'pause'), ['-v']);
    if (stdout.trim() !== `pause.c ${PAUSE_BUILD_VERSION}`) {
      throw new ControlPlaneError(
        `the pause just compiled reports "${stdout.trim()}", not pause.c ${PAUSE_BUILD_VERSION}.`,
        'check the -DVERSION flag in packages/controlplane/src/node-binaries.ts.',
      );
    }
    await mkdir(dir, { recursive: true });
    await rename(join(work, 'pause'), bin);
    await rm(work, { recursive: true, force: true });
    log(`pause ${PAUSE_BUILD_VERSION} compiled into ${dir}`);
  });
  return bin;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
