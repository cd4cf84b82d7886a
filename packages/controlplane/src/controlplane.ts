/**
 * One real control plane: etcd and kube-apiserver on free loopback ports, with
 * generated certificates, RBAC authorisation and service-account token signing, the
 * way controller-runtime's envtest starts one; and, on request, kube-controller-manager
 * (garbage collection, namespace deletion, ClusterRole aggregation: see
 * controller-manager.ts).
 *
 * Guarantees:
 * - `start()` resolves only once `/readyz` answers and the `default` namespace exists
 *   (and, when asked for, the controller manager is ready);
 *   if anything fails on the way it stops what it started and removes its folder
 *   before rejecting, so there is never a half-started plane.
 * - `stop()` reaps every process and removes the folder; interrupting the process
 *   (SIGINT, SIGTERM, SIGHUP) does the same (see process.ts).
 * - A controller manager that dies after start is logged with the tail of its log, and
 *   `checkControllerManager()` rejects with that error, for tests waiting on its work.
 * - The apiserver can be stopped and started again on the same port and etcd
 *   (`restartApiserver`), for tests of what survives an apiserver outage.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Log, type PlaneBinaries, resolvePlaneBinaries } from './binaries.ts';
import {
  type ControllerManagerOptions,
  controllerManagerArgs,
  controllersOf,
  controllersStarted,
  DEFAULT_CONTROLLERS,
  KcmController,
} from './controller-manager.ts';
import { ControlPlaneError, tail } from './errors.ts';
import { freePort } from './free-port.ts';
import { httpGet, httpsGet } from './http-get.ts';
import { isAlive } from './lock.ts';
import { Node } from './node.ts';
import type { NodeBinaries } from './node-binaries.ts';
import { clientCertificate, generatePki, type Pem, type Pki } from './pki.ts';
import { registerFolder, Supervised, unregisterFolder } from './process.ts';

const FOLDER_PREFIX = 'kube-operators-ts-plane-';
const START_TIMEOUT_MS = 90_000;

export interface ControlPlaneOptions {
  readonly log?: Log;
  /** Extra kube-apiserver flags, e.g. `--watch-cache=false`. */
  readonly apiserverFlags?: readonly string[];
  /** Fixed ports instead of free ones (the `up` command uses this); a taken port is an error. */
  readonly apiserverPort?: number;
  readonly etcdPort?: number;
  /**
   * Run kube-controller-manager: `true` for the default controllers (garbage collector,
   * namespace, clusterrole-aggregation, serviceaccount, serviceaccount-token,
   * endpointslice), or `{ controllers }` for a chosen set. Off by default: tests that
   * need cascading deletion, namespace deletion or aggregation ask for it.
   */
  readonly controllerManager?: boolean | ControllerManagerOptions;
  /**
   * A real node on this machine (node.ts): containerd, kubelet, kube-proxy, kube-scheduler
   * and CoreDNS, registered with this plane. The apiserver then listens on the node's
   * address (not 127.0.0.1), authorises kubelets (`Node,RBAC`, NodeRestriction), mounts
   * service-account tokens into pods, and the controller manager also runs the
   * controllers pods need ({@link NODE_CONTROLLERS}). Needs root; one per machine.
   */
  readonly node?: PlaneNodeOptions;
  /**
   * The address the apiserver listens on, 127.0.0.1 by default; a node's address
   * (`10.244.0.1`, see node-config.ts) makes a second plane reachable from that node's
   * pods, as a client cluster is from an operator. Ignored with `node`, which sets it.
   */
  readonly apiserverHost?: string;
}

/** What a plane's node is started with; resolved by the caller (images build the sandbox image). */
export interface PlaneNodeOptions {
  readonly binaries: NodeBinaries;
  /** The sandbox ("pause") image: its name, and an OCI archive of it to import. */
  readonly sandboxImage: { readonly name: string; readonly archive: string };
}

/** The controllers a plane with a node adds to the defaults: workloads, node health, root CA publishing. */
export const NODE_CONTROLLERS: readonly string[] = [
  'deployment-controller',
  'replicaset-controller',
  'statefulset-controller',
  'daemonset-controller',
  'job-controller',
  'disruption-controller',
  'pod-garbage-collector-controller',
  // Projected service-account volumes read the kube-root-ca.crt ConfigMap it publishes.
  'root-ca-certificate-publisher-controller',
  'node-lifecycle-controller',
  'taint-eviction-controller',
];

export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

export class ControlPlane {
  /** The plane's folder: certificates, kubeconfig, etcd data, logs. */
  readonly dir: string;
  readonly binaries: PlaneBinaries;
  readonly pki: Pki;
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  readonly kubeconfigPath: string;
  readonly etcdUrl: string;
  private etcd: Supervised | undefined;
  private apiserver: Supervised | undefined;
  private controllerManager: Supervised | undefined;
  /** The node, when the plane was started with one. */
  node: Node | undefined;
  private readonly apiserverArgs: readonly string[];
  private readonly log: Log;
  private stopped = false;

  private constructor(init: {
    dir: string;
    binaries: PlaneBinaries;
    pki: Pki;
    apiPort: number;
    apiHost: string;
    etcdUrl: string;
    apiserverArgs: readonly string[];
    log: Log;
  }) {
    this.dir = init.dir;
    this.binaries = init.binaries;
    this.pki = init.pki;
    this.url = `https://${init.apiHost}:${init.apiPort}`;
    this.kubeconfigPath = join(init.dir, 'kubeconfig');
    this.etcdUrl = init.etcdUrl;
    this.apiserverArgs = init.apiserverArgs;
    this.log = init.log;
  }

  static async start(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const log = opts.log ?? ((m: string) => process.stderr.write(`[controlplane] ${m}\n`));
    sweepAbandonedFolders();
    const binaries = await resolvePlaneBinaries(log);
    if (controllersOf(opts.controllerManager).length > 0 && !binaries.kubeControllerManager) {
      throw new ControlPlaneError(
        `this plane asks for kube-controller-manager, and KUBEBUILDER_ASSETS (${process.env.KUBEBUILDER_ASSETS}) ` +
          'provides kube-apiserver but no kube-controller-manager (envtest folders have none).',
        'put a kube-controller-manager of the same version in that folder, or unset KUBEBUILDER_ASSETS to ' +
          'build all three with Go (npm run setup), or start the plane without controllerManager.',
      );
    }
    // Ports are probed free, then bound by the servers: another process can take one
    // in between, so a bind failure on a probed port is retried with new ports.
    for (let attempt = 1; ; attempt++) {
      try {
        return await ControlPlane.startOnce(binaries, opts, log);
      } catch (err) {
        const portRace =
          err instanceof ControlPlaneError &&
          /address already in use/.test(err.detail ?? '') &&
          !opts.apiserverPort;
        if (!portRace || attempt >= 3) throw err;
        log(`a port was taken between probing and binding; retrying with new ports (attempt ${attempt + 1})`);
      }
    }
  }

  private static async startOnce(
    binaries: PlaneBinaries,
    opts: ControlPlaneOptions,
    log: Log,
  ): Promise<ControlPlane> {
    const dir = mkdtempSync(join(tmpdir(), FOLDER_PREFIX));
    registerFolder(dir);
    await writeFile(join(dir, 'owner.pid'), String(process.pid));
    let plane: ControlPlane | undefined;
    let node: Node | undefined;
    try {
      // The node's address must exist before the apiserver binds it.
      if (opts.node) node = await Node.prepare(opts.node.binaries, log);
      const apiHost = node ? node.ip : (opts.apiserverHost ?? '127.0.0.1');
      const [etcdPort, peerPort, apiPort] = await Promise.all([
        opts.etcdPort ? ensureFree(opts.etcdPort, 'etcd') : freePort(),
        freePort(),
        opts.apiserverPort ? ensureFree(opts.apiserverPort, 'kube-apiserver') : freePort(),
      ]);
      // 10.0.0.1: the `kubernetes` Service's ClusterIP in --service-cluster-ip-range, which pods dial.
      const pki = await generatePki(node ? [node.ip, '10.0.0.1'] : apiHost === '127.0.0.1' ? [] : [apiHost]);
      const certs = join(dir, 'pki');
      await mkdir(certs);
      const files = {
        ca: join(certs, 'ca.crt'),
        servingCert: join(certs, 'apiserver.crt'),
        servingKey: join(certs, 'apiserver.key'),
        saKey: join(certs, 'sa.key'),
        saPub: join(certs, 'sa.pub'),
        admin: join(certs, 'admin.crt'),
        adminKey: join(certs, 'admin.key'),
      };
      await Promise.all([
        writeFile(files.ca, pki.ca.cert),
        writeFile(files.servingCert, pki.serving.cert),
        writeFile(files.servingKey, pki.serving.key, { mode: 0o600 }),
        writeFile(files.saKey, pki.serviceAccount.privateKey, { mode: 0o600 }),
        writeFile(files.saPub, pki.serviceAccount.publicKey),
        writeFile(files.admin, pki.admin.cert),
        writeFile(files.adminKey, pki.admin.key, { mode: 0o600 }),
      ]);
      const etcdUrl = `http://127.0.0.1:${etcdPort}`;
      const apiserverArgs = [
        `--etcd-servers=${etcdUrl}`,
        `--bind-address=${apiHost}`,
        `--advertise-address=${apiHost}`,
        `--secure-port=${apiPort}`,
        `--cert-dir=${certs}`,
        `--tls-cert-file=${files.servingCert}`,
        `--tls-private-key-file=${files.servingKey}`,
        `--client-ca-file=${files.ca}`,
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${files.saPub}`,
        `--service-account-signing-key-file=${files.saKey}`,
        ...(node
          ? [
              '--authorization-mode=Node,RBAC',
              '--enable-admission-plugins=NodeRestriction',
              // logs, exec and port-forward: the apiserver dials the kubelet as the admin.
              `--kubelet-client-certificate=${files.admin}`,
              `--kubelet-client-key=${files.adminKey}`,
              `--kubelet-certificate-authority=${files.ca}`,
              '--kubelet-preferred-address-types=InternalIP',
            ]
          : ['--authorization-mode=RBAC', '--disable-admission-plugins=ServiceAccount']),
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        '--profiling=false',
        ...(opts.apiserverFlags ?? []),
      ];
      plane = new ControlPlane({ dir, binaries, pki, apiPort, apiHost, etcdUrl, apiserverArgs, log });
      plane.node = node;
      await plane.writeKubeconfig();
      await plane.startEtcd(etcdPort, peerPort);
      await plane.startApiserver();
      const asked = controllersOf(opts.controllerManager);
      const controllers = node
        ? [...new Set([...(asked.length ? asked : DEFAULT_CONTROLLERS), ...NODE_CONTROLLERS])]
        : asked;
      if (controllers.length > 0) await plane.startControllerManager(controllers, files);
      if (node && opts.node) {
        await node.start(
          {
            url: plane.url,
            pki,
            kubeconfigPath: plane.kubeconfigPath,
            kubectl: binaries.kubectl,
            kubeconfig: (server, user) => plane?.kubeconfig(server, user) ?? '',
          },
          opts.node.sandboxImage,
        );
      }
      return plane;
    } catch (err) {
      if (plane) await plane.stop();
      else {
        await node?.stop();
        rmSync(dir, { recursive: true, force: true });
        unregisterFolder(dir);
      }
      throw err;
    }
  }

  private async startEtcd(port: number, peerPort: number): Promise<void> {
    const peer = `http://127.0.0.1:${peerPort}`;
    const client = `http://127.0.0.1:${port}`;
    this.etcd = new Supervised({
      name: 'etcd',
      command: this.binaries.etcd,
      args: [
        `--data-dir=${join(this.dir, 'etcd')}`,
        `--listen-client-urls=${client}`,
        `--advertise-client-urls=${client}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=default=${peer}`,
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
      logFile: join(this.dir, 'etcd.log'),
    });
    await this.waitFor(this.etcd, async () =>
      (await httpGet(`${client}/health`)).body.includes('"health":"true"'),
    );
  }

  /** Starts kube-apiserver (again) against the same etcd, port and certificates. */
  async startApiserver(): Promise<void> {
    if (this.apiserver && !this.apiserver.exit) return;
    this.apiserver = new Supervised({
      name: 'kube-apiserver',
      command: this.binaries.kubeApiserver,
      args: this.apiserverArgs,
      logFile: join(this.dir, 'kube-apiserver.log'),
    });
    await this.waitFor(this.apiserver, async () => {
      if ((await this.adminGet('/readyz')).status !== 200) return false;
      return (await this.adminGet('/api/v1/namespaces/default')).status === 200;
    });
  }

  /**
   * kube-controller-manager with its own identity (CN=system:kube-controller-manager,
   * bound by the apiserver's bootstrap RBAC), on a free port, ready when its
   * `/healthz` lists every requested controller and one of them has acted.
   */
  private async startControllerManager(
    controllers: readonly string[],
    files: { ca: string; servingCert: string; servingKey: string; saKey: string },
  ): Promise<void> {
    const command = this.binaries.kubeControllerManager;
    if (!command) throw new Error('unreachable: checked in start()');
    const identity = await clientCertificate(this.pki.ca, 'system:kube-controller-manager', []);
    const kubeconfig = join(this.dir, 'controller-manager.kubeconfig');
    await writeFile(kubeconfig, this.kubeconfig(this.url, identity), { mode: 0o600 });
    const port = await freePort();
    const proc = new Supervised({
      name: 'kube-controller-manager',
      command,
      args: controllerManagerArgs(controllers, { ...files, kubeconfig, port }),
      logFile: join(this.dir, 'kube-controller-manager.log'),
    });
    this.controllerManager = proc;
    const healthz = `https://127.0.0.1:${port}/healthz?verbose`;
    await this.waitFor(proc, async () => {
      const res = await httpsGet(healthz, { ca: this.pki.ca.cert });
      if (res.status !== 200 || !controllersStarted(res.body, controllers)) return false;
      if (!controllers.includes(KcmController.ServiceAccount)) return true;
      return (await this.adminGet('/api/v1/namespaces/default/serviceaccounts/default')).status === 200;
    });
    void proc.done.then(async (exit) => {
      // Code 0 or SIGINT/SIGTERM/SIGHUP is a requested stop: a terminal's Ctrl-C
      // reaches the whole process group, the controller manager included, before the
      // owner stops the plane. A crash, or a SIGKILL (the OOM killer's), is reported.
      const requested = exit.code === 0 || ['SIGINT', 'SIGTERM', 'SIGHUP'].includes(exit.signal ?? '');
      if (!this.stopped && !requested) this.log((await this.controllerManagerDeath(proc)).message);
    });
  }

  /**
   * Rejects with the controller manager's exit and the tail of its log if it died after
   * start (or if this plane runs none); for tests waiting on garbage collection or
   * namespace deletion, so that they fail with the cause rather than a timeout.
   */
  async checkControllerManager(): Promise<void> {
    const proc = this.controllerManager;
    if (!proc) {
      throw new ControlPlaneError(
        'this plane runs no kube-controller-manager.',
        'start it with ControlPlane.start({ controllerManager: true }) (privateTestEnv({ controllerManager: true }) in tests).',
      );
    }
    if (proc.exit) throw await this.controllerManagerDeath(proc);
  }

  private async controllerManagerDeath(proc: Supervised): Promise<ControlPlaneError> {
    const exit = proc.exit;
    const log = await readLog(proc.logFile);
    return new ControlPlaneError(
      `kube-controller-manager exited (code ${exit?.code ?? exit?.signal}) while the plane was running: ` +
        'garbage collection, namespace deletion and ClusterRole aggregation have stopped.',
      hintFor(proc.name, log),
      tail(log),
    );
  }

  /**
   * A second kube-apiserver on the same etcd and certificates, on its own port: writes
   * through it happen while the first is down, as in a rolling apiserver upgrade.
   * Returns its kubeconfig and a stop function.
   */
  async startExtraApiserver(): Promise<{ url: string; kubeconfig: string; stop: () => Promise<void> }> {
    const port = await freePort();
    const proc = new Supervised({
      name: 'kube-apiserver (extra)',
      command: this.binaries.kubeApiserver,
      args: [...this.apiserverArgs.filter((a) => !a.startsWith('--secure-port=')), `--secure-port=${port}`],
      logFile: join(this.dir, `kube-apiserver-${port}.log`),
    });
    const url = `https://127.0.0.1:${port}`;
    await this.waitFor(proc, async () => (await this.adminGet('/readyz', url)).status === 200);
    return { url, kubeconfig: this.kubeconfig(url), stop: () => proc.stop() };
  }

  /** Stops kube-apiserver only; etcd keeps the data. */
  async stopApiserver(): Promise<void> {
    await this.apiserver?.stop();
  }

  async restartApiserver(): Promise<void> {
    await this.stopApiserver();
    await this.startApiserver();
  }

  /** The running processes, for tests that check they are reaped. */
  get pids(): {
    etcd: number | undefined;
    apiserver: number | undefined;
    controllerManager: number | undefined;
  } {
    return {
      etcd: this.etcd?.pid,
      apiserver: this.apiserver?.pid,
      controllerManager: this.controllerManager?.pid,
    };
  }

  /** The supervised kube-controller-manager, for tests that crash it on purpose. */
  get controllerManagerProcess(): Supervised | undefined {
    return this.controllerManager;
  }

  /** The supervised etcd, for tests that crash it on purpose. */
  get etcdProcess(): Supervised | undefined {
    return this.etcd;
  }

  /** See {@link compactEtcd}. */
  compactEtcd(): Promise<number> {
    return compactEtcd(this.etcdUrl);
  }

  /** Stops every process (the controller manager first, etcd last) and removes the folder. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // The node first: its kubelet and proxies would log the apiserver's departure, and
    // its teardown needs nothing of the plane.
    await this.node?.stop();
    await this.controllerManager?.stop();
    await this.apiserver?.stop();
    await this.etcd?.stop();
    rmSync(this.dir, { recursive: true, force: true });
    unregisterFolder(this.dir);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Kubeconfig with everything inline, so it can be copied anywhere; the admin's unless `user` is given. */
  kubeconfig(server: string = this.url, user: Pem = this.pki.admin): string {
    const b64 = (s: string): string => Buffer.from(s).toString('base64');
    return [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: kube-operators-ts',
      '  cluster:',
      `    server: ${server}`,
      `    certificate-authority-data: ${b64(this.pki.ca.cert)}`,
      'users:',
      '- name: admin',
      '  user:',
      `    client-certificate-data: ${b64(user.cert)}`,
      `    client-key-data: ${b64(user.key)}`,
      'contexts:',
      '- name: kube-operators-ts',
      '  context:',
      '    cluster: kube-operators-ts',
      '    user: admin',
      'current-context: kube-operators-ts',
      '',
    ].join('\n');
  }

  private async writeKubeconfig(): Promise<void> {
    await writeFile(this.kubeconfigPath, this.kubeconfig(), { mode: 0o600 });
  }

  /**
   * Polls `ready` until true; fails at once, with the process's log, if the process
   * exits, and after START_TIMEOUT_MS otherwise.
   */
  private async waitFor(proc: Supervised, ready: () => Promise<boolean>): Promise<void> {
    const started = Date.now();
    for (;;) {
      if (proc.exit) {
        throw new ControlPlaneError(
          `${proc.name} exited during start-up (code ${proc.exit.code ?? proc.exit.signal}).`,
          hintFor(proc.name, await readLog(proc.logFile)),
          tail(await readLog(proc.logFile)),
        );
      }
      try {
        if (await ready()) return;
      } catch {
        // Not listening yet.
      }
      if (Date.now() - started > START_TIMEOUT_MS) {
        throw new ControlPlaneError(
          `${proc.name} did not become ready within ${START_TIMEOUT_MS / 1000} s.`,
          'look at its log below; on a loaded machine, retry.',
          tail(await readLog(proc.logFile)),
        );
      }
      await sleep(100);
    }
  }

  private adminGet(path: string, server: string = this.url): Promise<{ status: number; body: string }> {
    return httpsGet(`${server}${path}`, {
      ca: this.pki.ca.cert,
      cert: this.pki.admin.cert,
      key: this.pki.admin.key,
    });
  }
}

function hintFor(name: string, log: string): string {
  if (/address already in use/.test(log))
    return `another process holds ${name}'s port; stop it or let the plane pick free ports.`;
  if (/permission denied/i.test(log)) return 'check the permissions of the binary and of the temp folder.';
  if (/no space left/.test(log)) return 'free disk space.';
  return `read ${name}'s log below.`;
}

async function readLog(file: string): Promise<string> {
  return readFile(file, 'utf8').catch(() => '');
}

function ensureFree(port: number, who: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new ControlPlaneError(
          `port ${port}, asked for ${who}, is taken (${err.code}).`,
          `stop whatever listens on 127.0.0.1:${port} (\`ss -ltnp | grep ${port}\`), or choose another port.`,
        ),
      ),
    );
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(port)));
  });
}

/**
 * Compacts etcd's history up to its current revision (through etcd's JSON gateway),
 * so that any older resourceVersion is answered with 410 Gone.
 */
export async function compactEtcd(etcdUrl: string): Promise<number> {
  const status = JSON.parse(
    await httpPost(`${etcdUrl}/v3/kv/range`, { key: Buffer.from('/').toString('base64') }),
  ) as {
    header?: { revision?: string };
  };
  const revision = Number(status.header?.revision ?? 0);
  await httpPost(`${etcdUrl}/v3/kv/compaction`, { revision: String(revision), physical: true });
  return revision;
}

function httpPost(url: string, body: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', timeout: 5_000, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => {
          text += d;
        });
        res.on('end', () =>
          (res.statusCode ?? 0) < 300
            ? resolve(text)
            : reject(new Error(`${url}: HTTP ${res.statusCode}: ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/**
 * Removes plane folders whose owning process is gone (a run killed with SIGKILL on a
 * machine without setpriv): their etcd died with its parent, the folder did not.
 */
function sweepAbandonedFolders(): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(tmpdir()).filter((e) => e.startsWith(FOLDER_PREFIX));
  } catch {
    return;
  }
  for (const e of entries) {
    const dir = join(tmpdir(), e);
    try {
      const pid = Number.parseInt(readFileSync(join(dir, 'owner.pid'), 'utf8'), 10);
      if (Number.isFinite(pid) && isAlive(pid)) continue;
      // A folder created this instant may not have its pid file yet: leave young ones.
      if (!Number.isFinite(pid) && Date.now() - statSync(dir).mtimeMs < 60_000) continue;
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Another sweeper got there first.
    }
  }
}
