/**
 * A real node for a control plane, on this machine: containerd 2 (its CRI plugin) with
 * Debian's runc, the CNI bridge, host-local, loopback and portmap plugins, the kubelet,
 * kube-proxy (iptables mode), kube-scheduler and CoreDNS, registered with the plane's
 * apiserver. Pods get addresses on a bridge the host routes to; Services answer through
 * kube-proxy from the host and from pods. What each file says is decided in
 * node-config.ts; this module starts, watches and removes.
 *
 * Guarantees:
 * - One node per machine: the node's folder (`<tmp>/kube-operators-ts-node`) holds its
 *   owner's pid. A second start while the owner lives is refused; a folder whose owner is
 *   gone (a run killed with SIGKILL) is torn down first, from the state it recorded.
 * - A node refuses to start beside another kubelet or containerd of the machine
 *   ({@link FOREIGN_MARKERS}): it would share, then remove, their paths.
 * - `stop()` removes everything the node made: containers and shims (by cgroup and by
 *   binary), containerd and the node's processes, mounts and network namespaces under the
 *   folder, the bridge (which holds the node's address), every iptables chain of kube-proxy, the kubelet,
 *   CNI and ours (and only the rules that jump to them), the `kubepods` cgroups, the
 *   compiled-in paths it created, and the four sysctls the kubelet and the bridge
 *   plugin change, restored to the values read at start.
 * - Needs root (CAP_NET_ADMIN, mounts, cgroups): a non-root start fails saying so.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, readlink, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { Log } from './binaries.ts';
import { ControlPlaneError, tail } from './errors.ts';
import { freePort } from './free-port.ts';
import { httpGet, httpsGet } from './http-get.ts';
import { isAlive } from './lock.ts';
import type { NodeBinaries } from './node-binaries.ts';
import {
  CLUSTER_DOMAIN,
  COMPILED_IN_PATHS,
  cniConflist,
  containerdConfig,
  corefile,
  FOREIGN_MARKERS,
  kubeletConfig,
  kubeProxyConfig,
  NODE_ADDRESSES,
  type NodeLayout,
  nodePaths,
  registryHostsToml,
  resolvConf,
  TOUCHED_SYSCTLS,
} from './node-config.ts';
import { iptablesTeardown, NODE_FORWARD_CHAIN } from './node-iptables.ts';
import { clientCertificate, type Pem, servingCertificate } from './pki.ts';
import { registerCleanup, Supervised } from './process.ts';

const exec = promisify(execFile);

/** The node's folder: fixed, so that a run killed without cleanup is found and undone by the next. */
export const NODE_DIR = join(tmpdir(), 'kube-operators-ts-node');

/** What a node needs of its plane. */
export interface NodePlane {
  /** `https://<node address>:<port>`: the apiserver listens on the node's address. */
  readonly url: string;
  readonly pki: { readonly ca: Pem; readonly admin: Pem };
  /** The admin kubeconfig's path, for kubectl. */
  readonly kubeconfigPath: string;
  readonly kubectl: string;
  kubeconfig(server: string, user: Pem): string;
}

/** Written at start; read by stop, and by the next start when the owner died. */
interface NodeState {
  readonly owner: number;
  readonly sysctls: Record<string, string>;
  /** Compiled-in paths that existed before the node: never removed. */
  readonly preexisting: readonly string[];
  readonly shim: string;
  readonly bridge: string;
}

const READY_TIMEOUT_MS = 90_000;

export class Node {
  readonly name: string;
  readonly ip: string;
  readonly dir: string;
  readonly podCidr: string;
  private readonly log: Log;
  private readonly procs = new Map<string, Supervised>();
  private layout: NodeLayout | undefined;
  private binaries: NodeBinaries | undefined;
  private stopped = false;
  private unregister: () => void = () => undefined;

  private constructor(log: Log) {
    this.log = log;
    this.name = 'kot-node';
    this.ip = NODE_ADDRESSES.ip;
    this.dir = NODE_DIR;
    this.podCidr = NODE_ADDRESSES.podCidr;
  }

  /**
   * Takes the machine's node folder (undoing a dead owner's node first), records what
   * the node will change, and brings up the node's address, which the apiserver must
   * listen on before it starts. `binaries` are resolved by the caller.
   */
  static async prepare(binaries: NodeBinaries, log: Log): Promise<Node> {
    if (process.getuid?.() !== 0) {
      throw new ControlPlaneError(
        'a node needs root: it creates network links, mounts, cgroups and iptables rules.',
        'run as root (CI and dev containers do), or start the plane without a node.',
      );
    }
    await sweepNode(log);
    for (const m of FOREIGN_MARKERS) {
      if (existsSync(m)) {
        throw new ControlPlaneError(
          `${m} exists: another kubelet or containerd runs on this machine.`,
          'a node of ours would share and then remove its paths; stop that one first, or start the plane without a node.',
        );
      }
    }
    const node = new Node(log);
    node.binaries = binaries;
    // An interrupted run tears its node down too (the next start would otherwise find it).
    node.unregister = registerCleanup(() => node.stop());
    await mkdir(node.dir, { recursive: true });
    const state: NodeState = {
      owner: process.pid,
      sysctls: Object.fromEntries(
        await Promise.all(
          TOUCHED_SYSCTLS.map(async (s) => [s, (await readFile(`/proc/sys/${s}`, 'utf8')).trim()] as const),
        ),
      ),
      preexisting: COMPILED_IN_PATHS.filter((p) => existsSync(p)),
      shim: binaries.containerdShim,
      bridge: NODE_ADDRESSES.bridge,
    };
    await writeFile(nodePaths(node.dir).state, JSON.stringify(state, null, 2));
    await writeFile(join(node.dir, 'owner.pid'), String(process.pid));
    // The node's address lives on the pods' bridge, made here rather than by the CNI
    // plugin (which adopts it): these machines' kernels have no dummy links, and the
    // apiserver must bind the address before any pod exists.
    await ip(['link', 'add', NODE_ADDRESSES.bridge, 'type', 'bridge']);
    await ip([
      'addr',
      'add',
      `${NODE_ADDRESSES.ip}/${NODE_ADDRESSES.podCidr.split('/')[1]}`,
      'dev',
      NODE_ADDRESSES.bridge,
    ]);
    await ip(['link', 'set', NODE_ADDRESSES.bridge, 'up']);
    return node;
  }

  /**
   * Starts containerd, imports the sandbox image, then the kubelet, kube-proxy,
   * kube-scheduler and CoreDNS; resolves once the Node is Ready, DNS answers and the
   * default ServiceAccount can be used.
   */
  async start(plane: NodePlane, sandboxImage: { name: string; archive: string }): Promise<void> {
    const b = this.binaries;
    if (!b) throw new Error('unreachable: prepare() sets the binaries');
    const [kubeletPort, kubeletHealthzPort, proxyHealthzPort, proxyMetricsPort, schedulerPort, dnsReadyPort] =
      await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()]);
    const n: NodeLayout = {
      dir: this.dir,
      name: this.name,
      ip: this.ip,
      bridge: NODE_ADDRESSES.bridge,
      podCidr: this.podCidr,
      serviceCidr: '10.0.0.0/24',
      kubeletPort,
      kubeletHealthzPort,
      proxyHealthzPort,
      proxyMetricsPort,
      schedulerPort,
      dnsReadyPort,
      runc: b.runc,
      cniBinDir: b.cniBinDir,
      sandboxImage: sandboxImage.name,
    };
    this.layout = n;
    const p = nodePaths(this.dir);
    for (const d of [
      p.cniConfDir,
      p.cniDataDir,
      p.kubeletRoot,
      p.kubeletCerts,
      p.podLogs,
      dirname(p.containerdSocket),
      dirname(p.defaultRegistryHosts),
    ]) {
      await mkdir(d, { recursive: true });
    }
    const ca = plane.pki.ca;
    const [kubeletClient, kubeletServing, proxyClient, schedulerClient, dnsClient] = await Promise.all([
      clientCertificate(ca, `system:node:${this.name}`, ['system:nodes']),
      servingCertificate(ca, this.name, [this.ip], [this.name]),
      clientCertificate(ca, 'system:kube-proxy', []),
      clientCertificate(ca, 'system:kube-scheduler', []),
      clientCertificate(ca, 'system:kube-operators-ts:coredns', []),
    ]);
    const secret = { mode: 0o600 } as const;
    await Promise.all([
      writeFile(p.containerdConfig, containerdConfig(n)),
      writeFile(p.defaultRegistryHosts, registryHostsToml()),
      writeFile(join(p.cniConfDir, '10-kube-operators-ts.conflist'), cniConflist(n)),
      writeFile(p.kubeletConfig, kubeletConfig(n)),
      writeFile(p.resolvConf, resolvConf(n)),
      writeFile(p.clientCa, ca.cert),
      writeFile(p.kubeletServingCert, kubeletServing.cert),
      writeFile(p.kubeletServingKey, kubeletServing.key, secret),
      writeFile(p.kubeletKubeconfig, plane.kubeconfig(plane.url, kubeletClient), secret),
      writeFile(p.proxyConfig, kubeProxyConfig(n)),
      writeFile(p.proxyKubeconfig, plane.kubeconfig(plane.url, proxyClient), secret),
      writeFile(p.schedulerKubeconfig, plane.kubeconfig(plane.url, schedulerClient), secret),
      writeFile(p.corefile, corefile(n)),
      writeFile(p.dnsKubeconfig, plane.kubeconfig(plane.url, dnsClient), secret),
    ]);
    await this.allowPodsOnlyTheBridge();
    await applyManifest(plane, COREDNS_RBAC);

    const started = Date.now();
    await this.startContainerd(b);
    await this.importImage(sandboxImage.archive);

    const kubelet = this.spawnKubelet(b);
    const proxy = this.spawn('kube-proxy', b.kubeProxy, [`--config=${p.proxyConfig}`, '--v=1']);
    const scheduler = this.spawn('kube-scheduler', b.kubeScheduler, [
      `--kubeconfig=${p.schedulerKubeconfig}`,
      `--authentication-kubeconfig=${p.schedulerKubeconfig}`,
      `--authorization-kubeconfig=${p.schedulerKubeconfig}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${schedulerPort}`,
      '--leader-elect=false',
      '--profiling=false',
    ]);
    const dns = this.spawn('coredns', b.coredns, ['-conf', p.corefile]);
    const adminTls = { ca: ca.cert, cert: plane.pki.admin.cert, key: plane.pki.admin.key };
    await Promise.all([
      this.waitFor(kubelet, async () => {
        const res = await httpsGet(`${plane.url}/api/v1/nodes/${this.name}`, adminTls);
        if (res.status !== 200) return false;
        const node = JSON.parse(res.body) as {
          status?: { conditions?: { type: string; status: string }[] };
        };
        return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      }),
      this.waitFor(
        proxy,
        async () => (await httpGet(`http://127.0.0.1:${proxyHealthzPort}/healthz`)).status === 200,
      ),
      this.waitFor(
        scheduler,
        async () =>
          (await httpsGet(`https://127.0.0.1:${schedulerPort}/healthz`, { insecure: true })).status === 200,
      ),
      this.waitFor(dns, async () => (await httpGet(`http://127.0.0.1:${dnsReadyPort}/ready`)).status === 200),
    ]);
    this.log(`node ${this.name} Ready at ${this.ip} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  /** Loads an image archive (an OCI layout tar naming its image) into the node's containerd. */
  async importImage(archive: string): Promise<void> {
    await this.ctr(['-n', 'k8s.io', 'images', 'import', archive]);
  }

  /** The kubelet's, containerd's, … log file, for tests that show why a pod failed. */
  logFile(process: 'containerd' | 'kubelet' | 'kube-proxy' | 'kube-scheduler' | 'coredns'): string {
    return join(this.dir, `${process}.log`);
  }

  /**
   * Stops the kubelet and containerd and starts them again, the containers left running
   * as on a real node whose agents restart; for tests of what survives a node restart.
   */
  async restartAgents(): Promise<void> {
    const b = this.binaries;
    const n = this.layout;
    if (!b || !n) throw new Error('the node is not started');
    for (const name of ['kubelet', 'containerd']) await this.procs.get(name)?.stop(10_000);
    await this.startContainerd(b);
    const kubelet = this.spawnKubelet(b);
    // Back when the kubelet's own health check answers (it has synced with containerd).
    await this.waitFor(
      kubelet,
      async () => (await httpGet(`http://127.0.0.1:${n.kubeletHealthzPort}/healthz`)).status === 200,
    );
  }

  /** Stops every process and removes everything the node made (see the module's guarantees). Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unregister();
    const started = Date.now();
    // The kubelet first: it would restart what is killed below.
    for (const name of ['kubelet', 'kube-scheduler', 'kube-proxy', 'coredns']) {
      await this.procs.get(name)?.stop(5_000);
    }
    await teardown(this.dir, this.log, async () => {
      await this.procs.get('containerd')?.stop(5_000);
    });
    this.log(`node ${this.name} removed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  /** containerd, until it answers; it finds its shim on PATH. */
  private async startContainerd(b: NodeBinaries): Promise<void> {
    const containerd = this.spawn(
      'containerd',
      b.containerd,
      ['--config', nodePaths(this.dir).containerdConfig],
      {
        ...process.env,
        PATH: `${dirname(b.containerdShim)}:${process.env.PATH ?? ''}`,
      },
    );
    await this.waitFor(containerd, async () => {
      await this.ctr(['version']);
      return true;
    });
  }

  private spawnKubelet(b: NodeBinaries): Supervised {
    const p = nodePaths(this.dir);
    return this.spawn('kubelet', b.kubelet, [
      `--config=${p.kubeletConfig}`,
      `--kubeconfig=${p.kubeletKubeconfig}`,
      `--root-dir=${p.kubeletRoot}`,
      `--cert-dir=${p.kubeletCerts}`,
      `--hostname-override=${this.name}`,
      `--node-ip=${this.ip}`,
      '--v=1',
    ]);
  }

  private spawn(name: string, command: string, args: readonly string[], env?: NodeJS.ProcessEnv): Supervised {
    const proc = new Supervised({
      name,
      command,
      args,
      logFile: join(this.dir, `${name}.log`),
      ...(env ? { env } : {}),
    });
    this.procs.set(name, proc);
    void proc.done.then(async (exit) => {
      const requested = exit.code === 0 || ['SIGINT', 'SIGTERM', 'SIGHUP'].includes(exit.signal ?? '');
      if (!this.stopped && !requested && this.procs.get(name) === proc) {
        const log = await readFile(proc.logFile, 'utf8').catch(() => '');
        this.log(`${name} of the node exited (code ${exit.code ?? exit.signal}):\n${tail(log, 15)}`);
      }
    });
    return proc;
  }

  private async ctr(args: readonly string[]): Promise<string> {
    const b = this.binaries;
    if (!b) throw new Error('unreachable');
    const { stdout } = await exec(b.ctr, ['--address', nodePaths(this.dir).containerdSocket, ...args], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  }

  /**
   * Pods may send to one another and to the host over the bridge, and nowhere else: the
   * first rule of FORWARD sends their traffic to a chain that drops what leaves by any
   * other link. (Traffic to the node's own address is INPUT, not FORWARD.)
   */
  private async allowPodsOnlyTheBridge(): Promise<void> {
    await iptables(['-t', 'filter', '-N', NODE_FORWARD_CHAIN]);
    await iptables([
      '-t',
      'filter',
      '-A',
      NODE_FORWARD_CHAIN,
      '-s',
      this.podCidr,
      '!',
      '-o',
      NODE_ADDRESSES.bridge,
      '-j',
      'DROP',
    ]);
    await iptables(['-t', 'filter', '-I', 'FORWARD', '1', '-j', NODE_FORWARD_CHAIN]);
  }

  private async waitFor(proc: Supervised, ready: () => Promise<boolean>): Promise<void> {
    const started = Date.now();
    for (;;) {
      if (proc.exit) {
        throw new ControlPlaneError(
          `${proc.name} of the node exited during start-up (code ${proc.exit.code ?? proc.exit.signal}).`,
          `read ${proc.name}'s log below (all of it in ${proc.logFile}).`,
          tail(await readFile(proc.logFile, 'utf8').catch(() => '')),
        );
      }
      try {
        if (await ready()) return;
      } catch {
        // Not answering yet.
      }
      if (Date.now() - started > READY_TIMEOUT_MS) {
        throw new ControlPlaneError(
          `${proc.name} of the node was not ready within ${READY_TIMEOUT_MS / 1000} s.`,
          `read its log below (all of it in ${proc.logFile}).`,
          tail(await readFile(proc.logFile, 'utf8').catch(() => '')),
        );
      }
      await sleep(100);
    }
  }
}

/** CoreDNS's read access, as kubeadm grants it, to its own identity. */
const COREDNS_RBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: kube-operators-ts:coredns }
rules:
  - apiGroups: [""]
    resources: [endpoints, services, pods, namespaces]
    verbs: [list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: kube-operators-ts:coredns }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kube-operators-ts:coredns }
subjects:
  - { apiGroup: rbac.authorization.k8s.io, kind: User, name: system:kube-operators-ts:coredns }
`;

async function applyManifest(plane: NodePlane, manifest: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(plane.kubectl, ['--kubeconfig', plane.kubeconfigPath, 'apply', '-f', '-'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`kubectl apply: ${stderr}`))));
    child.stdin.end(manifest);
  });
}

/** Undoes the node of a folder whose owner is gone; refuses if the owner lives. */
async function sweepNode(log: Log): Promise<void> {
  if (!existsSync(NODE_DIR)) return;
  const pid = Number.parseInt(await readFile(join(NODE_DIR, 'owner.pid'), 'utf8').catch(() => ''), 10);
  if (Number.isFinite(pid) && pid !== process.pid && isAlive(pid)) {
    throw new ControlPlaneError(
      `a node already runs on this machine, owned by process ${pid} (${NODE_DIR}).`,
      'one node per machine: stop that run (its plane stops its node), or start this plane without a node.',
    );
  }
  log(`removing the node a previous run left in ${NODE_DIR} (its owner ${pid || '?'} is gone)`);
  await teardown(NODE_DIR, log, async () => undefined);
}

/**
 * Removes what a node made, from its recorded state: safe on a half-started node and on
 * one whose processes are all gone. `stopContainerd` runs once containers are dead.
 */
async function teardown(dir: string, log: Log, stopContainerd: () => Promise<void>): Promise<void> {
  const state = JSON.parse(
    await readFile(nodePaths(dir).state, 'utf8').catch(() => '{}'),
  ) as Partial<NodeState>;
  const problems: string[] = [];
  const attempt = async (what: string, fn: () => Promise<unknown>): Promise<void> => {
    try {
      await fn();
    } catch (err) {
      problems.push(`${what}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    }
  };
  // 1. Every process of a pod (the kubepods cgroups), then the shims that watched them.
  await attempt('killing the containers', () => killCgroup('kubepods'));
  if (state.shim) await attempt('killing the shims', () => killByExe(state.shim as string));
  await attempt('stopping containerd', stopContainerd);
  // 2. Mounts under the folder (rootfs overlays, secret tmpfs, network namespaces): the
  //    namespaces go with their last mount, their veth pairs with them.
  await attempt('unmounting', () => unmountUnder([dir, ...COMPILED_IN_PATHS]));
  // 3. Links, rules, cgroups, settings.
  const bridge = state.bridge;
  if (bridge)
    await attempt(`deleting link ${bridge}`, () => ip(['link', 'del', bridge]).catch(ignoreMissingLink));
  for (const table of ['filter', 'nat', 'mangle']) {
    await attempt(`removing iptables chains (${table})`, async () => {
      const { stdout } = await exec('iptables-save', ['-t', table]);
      for (const args of iptablesTeardown(stdout)) await iptables(args).catch(() => undefined);
    });
  }
  await attempt('removing the kubepods cgroups', () => removeCgroup('kubepods'));
  for (const [s, v] of Object.entries(state.sysctls ?? {})) {
    await attempt(`restoring ${s}`, () => writeFile(`/proc/sys/${s}`, `${v}\n`));
  }
  for (const p of COMPILED_IN_PATHS) {
    if (state.preexisting && !state.preexisting.includes(p)) {
      await attempt(`removing ${p}`, () => rm(p, { recursive: true, force: true }));
    }
  }
  await attempt(`removing ${dir}`, () => rm(dir, { recursive: true, force: true }));
  if (problems.length > 0) log(`the node's teardown left something behind:\n  ${problems.join('\n  ')}`);
}

function ignoreMissingLink(err: unknown): void {
  const text = `${(err as { stderr?: string }).stderr ?? ''}${(err as Error).message}`;
  if (!/Cannot find device|does not exist/.test(text)) throw err;
}

/** Every cgroup v1 hierarchy's folder for `name` (kubepods), wherever it is mounted. */
async function cgroupDirs(name: string): Promise<string[]> {
  const roots = await readdir('/sys/fs/cgroup').catch(() => [] as string[]);
  return roots.map((r) => join('/sys/fs/cgroup', r, name)).filter((d) => existsSync(d));
}

async function procsUnder(dir: string): Promise<number[]> {
  const out: number[] = [];
  const text = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  for (const l of text.split('\n')) if (l.trim()) out.push(Number(l));
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (e.isDirectory()) out.push(...(await procsUnder(join(dir, e.name))));
  }
  return out;
}

async function killCgroup(name: string): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const pids = new Set<number>();
    for (const d of await cgroupDirs(name)) for (const p of await procsUnder(d)) pids.add(p);
    if (pids.size === 0) return;
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    await sleep(100);
  }
  throw new Error(`processes of the ${name} cgroups survived 50 rounds of SIGKILL`);
}

async function killByExe(exe: string): Promise<void> {
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const target = await readlink(`/proc/${e}/exe`).catch(() => '');
    if (target === exe || target === `${exe} (deleted)`) {
      try {
        process.kill(Number(e), 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  }
}

async function removeCgroup(name: string): Promise<void> {
  const rmTree = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory()) await rmTree(join(dir, e.name));
    }
    await rmdir(dir);
  };
  for (const d of await cgroupDirs(name)) await rmTree(d);
}

/** Unmounts, deepest first, every mount at or below one of `roots` (lazily: nothing may hold it). */
async function unmountUnder(roots: readonly string[]): Promise<void> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const points = text
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    // mountinfo escapes space, tab, newline and backslash as octal.
    .map((p) => p.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(Number.parseInt(o, 8))))
    .filter((p) => roots.some((r) => p === r || p.startsWith(`${r}/`)))
    .sort((a, b) => b.length - a.length);
  for (const p of points) await exec('umount', ['-l', p]).catch(() => undefined);
}

async function ip(args: readonly string[]): Promise<void> {
  await exec('ip', [...args]);
}

async function iptables(args: readonly string[]): Promise<void> {
  await exec('iptables', ['-w', '5', ...args]);
}

/** The DNS name of a Service, as pods resolve it. */
export function serviceDnsName(name: string, namespace: string): string {
  return `${name}.${namespace}.svc.${CLUSTER_DOMAIN}`;
}
