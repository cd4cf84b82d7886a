/**
 * The permissions operator on real control planes: a management plane of the file's own
 * (with kube-controller-manager's garbage collector and ClusterRole aggregation, which
 * the operator's design leans on), one or more client planes (second real
 * kube-apiservers) registered as Cluster API clusters, and the operator running in this
 * process with its webhooks served over TLS and registered in the management apiserver.
 * Intervals are shortened so that §5's waits take seconds. Expected objects in the tests
 * are written out literally or read from the apiserver, never built with the operator's
 * own functions.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, type TestContext } from 'node:test';
import { KcmController } from '@operators/controlplane';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import {
  type GroupVersionKind,
  KubeClient,
  type KubeObject,
  selfSignedCertificates,
  writeCertificates,
} from '@operators/kit';
import pino from 'pino';
import { API_VERSION } from '../../src/api/common.ts';
import { permissionsCrds } from '../../src/api/gen-crds.ts';
import type { Intervals } from '../../src/controllers/deps.ts';
import { createOperator, type Operator, type OperatorOptions } from '../../src/operator.ts';
import { webhookConfiguration } from '../../src/webhooks/configuration.ts';
import {
  type ClientPlane,
  ensureClusterApi,
  type RegisteredCluster,
  type RegisterOptions,
  registerCluster,
  startClientPlane,
} from './client-plane.ts';

export const KIND = {
  Permission: { apiVersion: API_VERSION, kind: 'Permission' },
  Scope: { apiVersion: API_VERSION, kind: 'Scope' },
  UserRole: { apiVersion: API_VERSION, kind: 'UserRole' },
  GroupRole: { apiVersion: API_VERSION, kind: 'GroupRole' },
  Tenant: { apiVersion: API_VERSION, kind: 'Tenant' },
} as const;
export type Kind = keyof typeof KIND;

export const CLUSTER_ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' } as const;
export const CLUSTER_ROLE_BINDING = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
} as const;
export const ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' } as const;
export const ROLE_BINDING = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' } as const;
export const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;

export type Obj = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** Intervals short enough for tests (§5's minute becomes a second). */
export const TEST_INTERVALS: Intervals = {
  permissionInUseRetryMs: 1_000,
  scopeInUseRetryMs: 500,
  tenantScopeWaitMs: 500,
  scopeNamespaceRecheckMs: 2_000,
  scopeClusterRecheckMs: 5_000,
  resyncMs: 10 * 60_000,
};

/** Waits until `probe` returns a value (not undefined), or fails saying what it waited for. */
export function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  return eventually(what, probe, timeoutMs, 200);
}

export interface HarnessOptions {
  /** How many client planes; default 1. */
  readonly clients?: number;
  /** Serve and register the admission webhooks; default true. */
  readonly webhooks?: boolean;
  /** Third-party CRDs for the management plane (Cluster API is always installed). */
  readonly thirdParty?: readonly ('argoCd' | 'istio')[];
  /** Third-party CRDs for every client plane. */
  readonly clientThirdParty?: readonly ('argoCd' | 'istio')[];
  readonly operator?: Partial<OperatorOptions>;
}

export class Harness {
  private mgmtEnv: TestEnv | undefined;
  readonly clients: ClientPlane[] = [];
  readonly logs: string[] = [];
  private running: Operator | undefined;
  private scratch = '';
  private webhookRegistered = false;
  private readonly opts: HarnessOptions;
  private counter = 0;
  private gcWatching: Promise<void> | undefined;

  private constructor(opts: HarnessOptions) {
    this.opts = opts;
  }

  static forFile(opts: HarnessOptions = {}): Harness {
    const h = new Harness(opts);
    before(() => h.init(), { timeout: 240_000 });
    after(() => h.close(), { timeout: 120_000 });
    return h;
  }

  get mgmt(): TestEnv {
    if (!this.mgmtEnv) throw new Error('the harness is not started');
    return this.mgmtEnv;
  }

  get admin(): KubeClient {
    return this.mgmt.admin;
  }

  get operator(): Operator {
    if (!this.running) throw new Error('no operator is running');
    return this.running;
  }

  private async init(): Promise<void> {
    this.scratch = await mkdtemp(join(tmpdir(), 'permissions-e2e-'));
    const [mgmt, ...clients] = await Promise.all([
      privateTestEnv({
        controllerManager: {
          controllers: [KcmController.GarbageCollector, KcmController.ClusterRoleAggregation],
        },
      }),
      ...Array.from({ length: this.opts.clients ?? 1 }, () => startClientPlane()),
    ]);
    this.mgmtEnv = mgmt;
    this.clients.push(...clients);
    await mgmt.installCrds(permissionsCrds());
    await ensureClusterApi(mgmt);
    for (const t of this.opts.thirdParty ?? []) await mgmt.installThirdParty(t);
    for (const c of clients) for (const t of this.opts.clientThirdParty ?? []) await c.installThirdParty(t);
    await this.startOperator();
  }

  /** Starts the operator (again); resolves once its caches synced and the model is ready. */
  async startOperator(extra: Partial<OperatorOptions> = {}): Promise<Operator> {
    const logs = this.logs;
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(line);
        done();
      },
    });
    const client = await KubeClient.load(this.mgmt.kubeconfigPath);
    let webhooks: OperatorOptions['webhooks'];
    let caBundle = '';
    if (this.opts.webhooks ?? true) {
      const certDir = await mkdtemp(join(this.scratch, 'certs-'));
      const certs = await selfSignedCertificates({ ipAddresses: ['127.0.0.1'] });
      await writeCertificates(certDir, certs);
      caBundle = Buffer.from(certs.ca.cert).toString('base64');
      webhooks = { host: '127.0.0.1', port: 0, certDir };
    }
    const operator = createOperator({
      client,
      bundle: { host: '127.0.0.1', port: 0 },
      ...(webhooks ? { webhooks } : {}),
      intervals: TEST_INTERVALS,
      clusterDeadlineMs: 3_000,
      logger: pino({ level: 'debug', base: { operator: 'permissions' } }, stream),
      ...(this.opts.operator ?? {}),
      ...extra,
    });
    await operator.manager.start();
    this.running = operator;
    if (operator.webhooks) {
      await this.admin.apply(
        webhookConfiguration({ url: `https://127.0.0.1:${operator.webhooks.port}`, caBundle }),
        { fieldManager: 'permissions-e2e', force: true },
      );
      this.webhookRegistered = true;
    }
    await until('the model to be rebuilt', async () => (operator.model.isReady() ? true : undefined));
    return operator;
  }

  async stopOperator(): Promise<void> {
    const op = this.running;
    this.running = undefined;
    if (!op) return;
    if (this.webhookRegistered) {
      // Registered with failurePolicy Fail: without a server, every role write would be refused.
      await this.admin
        .delete(
          { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' },
          'permissions.shturval.tech',
        )
        .catch(() => undefined);
      this.webhookRegistered = false;
    }
    await op.manager.stop();
    await op.clusters.close();
  }

  /**
   * Resolves once kube-controller-manager's garbage collector watches our kinds. It
   * rediscovers resources only every 30 s (a fixed period in kube-controller-manager), and
   * our CRDs are installed after it starts: until then a foreground delete of one of our
   * objects waits (nothing removes `foregroundDeletion`) and owner references among our
   * kinds are not followed. The probe is that very case: a platform-level Scope with no
   * dependents, deleted in the foreground, in a namespace of its own; it is gone once the
   * collector handles Scopes (its monitors are resynced all at once, so the other kinds
   * too). Called by the tests that rely on the collector; the first call starts the probe
   * and the others share it.
   */
  garbageCollectorWatching(): Promise<void> {
    this.gcWatching ??= (async () => {
      const ns = `gc-probe-${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
      await this.admin.create({ ...NAMESPACE, metadata: { name: ns } });
      await this.admin.create({
        ...KIND.Scope,
        metadata: { namespace: ns, name: 'gc-probe' },
        spec: { level: 'platform' },
      });
      await this.admin.delete(KIND.Scope, 'gc-probe', ns, { propagationPolicy: 'Foreground' });
      await until(
        'the garbage collector to handle a foreground delete of a Scope',
        async () => ((await this.get('Scope', ns, 'gc-probe')) ? undefined : true),
        // The event, not a clock: 30 s of discovery period plus a loaded machine's sync.
        120_000,
      );
      await this.admin.delete(NAMESPACE, ns).catch(() => undefined);
    })();
    return this.gcWatching;
  }

  /** A fresh namespace on the management plane. */
  async namespace(t: TestContext, prefix = 'p'): Promise<string> {
    return this.mgmt.namespace(t, prefix);
  }

  /** A fresh namespace on client plane `i` (default 0). */
  async clientNamespace(name: string, i = 0): Promise<void> {
    await this.clients[i]?.admin.create({ ...NAMESPACE, metadata: { name } });
  }

  /** Registers client plane `i` as a Cluster API Cluster on the management plane. */
  cluster(opts: RegisterOptions, i = 0): Promise<RegisteredCluster> {
    const plane = this.clients[i];
    if (!plane) throw new Error(`no client plane ${i}`);
    return registerCluster(this.mgmt, plane, opts);
  }

  /** Creates one of our kinds on the management plane (as admin unless `as` is given). */
  async create(
    kind: Kind,
    namespace: string,
    name: string,
    spec: Record<string, unknown>,
    as?: KubeClient,
  ): Promise<Obj> {
    return (await (as ?? this.admin).create({ ...KIND[kind], metadata: { name, namespace }, spec })) as Obj;
  }

  get(kind: Kind, namespace: string, name: string): Promise<Obj | undefined> {
    return this.admin.find(KIND[kind], name, namespace) as Promise<Obj | undefined>;
  }

  async patchSpec(kind: Kind, namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
    await this.admin.patch(KIND[kind], name, namespace, { type: 'merge', body: { spec } });
  }

  async remove(
    kind: Kind,
    namespace: string,
    name: string,
    propagationPolicy?: 'Foreground' | 'Background',
  ): Promise<void> {
    await this.admin.delete(KIND[kind], name, namespace, propagationPolicy ? { propagationPolicy } : {});
  }

  /** Waits until the object is gone from the API. */
  gone(kind: Kind, namespace: string, name: string, timeoutMs = 30_000): Promise<true> {
    return until(
      `${kind} ${namespace}/${name} to be gone`,
      async () => ((await this.get(kind, namespace, name)) ? undefined : true),
      timeoutMs,
    );
  }

  /** Waits until `pred` holds for the object (and returns it). */
  waitFor(
    kind: Kind,
    namespace: string,
    name: string,
    what: string,
    pred: (o: Obj) => boolean,
    timeoutMs = 30_000,
  ): Promise<Obj> {
    return until(
      `${kind} ${namespace}/${name}: ${what}`,
      async () => {
        const o = await this.get(kind, namespace, name);
        return o && pred(o) ? o : undefined;
      },
      timeoutMs,
    );
  }

  /** Finds an object on a client plane (`i`) or, with `i` = 'mgmt', on the management plane. */
  find(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
    i: number | 'mgmt' = 0,
  ): Promise<KubeObject | undefined> {
    const c = i === 'mgmt' ? this.admin : this.clients[i]?.admin;
    if (!c) throw new Error(`no plane ${i}`);
    return c.find(gvk, name, namespace);
  }

  /** A unique short suffix for names. */
  unique(prefix: string): string {
    return `${prefix}-${++this.counter}${Math.random().toString(36).slice(2, 5)}`;
  }

  private async close(): Promise<void> {
    await this.stopOperator().catch(() => undefined);
    await Promise.all([this.mgmtEnv?.close(), ...this.clients.map((c) => c.close())]);
    await rm(this.scratch, { recursive: true, force: true });
  }
}
