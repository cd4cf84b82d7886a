/**
 * gitops-reverser on the real apiserver and real git: the operator runs in this process
 * against the run's shared control plane, writing to bare repositories in a temp folder
 * over `file://` (other transports in their own tests). Log lines are captured for tests
 * that grep them. Expected trees come from the apiserver's own objects, sanitized by a
 * second, naive implementation here, and are read back from the bare repository with git.
 *
 * ClusterProviders are cluster-scoped and the plane is shared: each file names its own
 * (never `default`, which the chart test owns on a private plane) and deletes them at the end.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  ApiErrorReason,
  type Condition,
  type GroupVersionKind,
  isApiError,
  KubeClient,
  type KubeObject,
} from '@operators/kit';
import pino from 'pino';
import { parse } from 'yaml';
import { CLUSTER_PROVIDER } from '../../src/api/cluster-provider.ts';
import { CLUSTER_WATCH_RULE } from '../../src/api/cluster-watch-rule.ts';
import { COMMIT_REQUEST } from '../../src/api/commit-request.ts';
import { gitopsReverserCrds } from '../../src/api/gen-crds.ts';
import { GIT_PROVIDER } from '../../src/api/git-provider.ts';
import { GIT_TARGET } from '../../src/api/git-target.ts';
import { WATCH_RULE } from '../../src/api/watch-rule.ts';
import { createOperator, type Operator, type OperatorOptions } from '../../src/operator.ts';
import { initBare, treeOf } from './git-fixtures.ts';

export const KINDS = {
  clusterProvider: CLUSTER_PROVIDER,
  gitProvider: GIT_PROVIDER,
  gitTarget: GIT_TARGET,
  watchRule: WATCH_RULE,
  clusterWatchRule: CLUSTER_WATCH_RULE,
  commitRequest: COMMIT_REQUEST,
} as const;

export type Obj = KubeObject & {
  spec?: Record<string, unknown>;
  status?: { conditions?: Condition[]; observedGeneration?: number } & Record<string, unknown>;
};

export const condition = (o: Obj | undefined, type: string): Condition | undefined =>
  o?.status?.conditions?.find((c) => c.type === type);

/** Waits until `probe` returns a value (not undefined), or fails after `timeoutMs` saying what it waited for. */
export function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  // Probes read git and the apiserver: a quarter second keeps them from crowding the operator.
  return eventually(what, probe, timeoutMs, 250);
}

export class Harness {
  private plane: TestEnv | undefined;
  readonly logs: string[] = [];
  private running: { operator: Operator; stop(): Promise<void> } | undefined;
  private readonly cleanups: (() => Promise<void>)[] = [];
  private readonly clusterScoped: { gvk: GroupVersionKind; name: string }[] = [];
  private scratch = '';
  /** The operator's namespace (remote kubeconfig Secrets live here). */
  operatorNamespace = '';
  private readonly options: Partial<OperatorOptions>;

  private constructor(options: Partial<OperatorOptions>) {
    this.options = options;
  }

  static forFile(options: Partial<OperatorOptions> = {}): Harness {
    const h = new Harness(options);
    before(() => h.init());
    after(() => h.close());
    return h;
  }

  get env(): TestEnv {
    if (!this.plane) throw new Error('the harness is not started');
    return this.plane;
  }

  get admin(): KubeClient {
    return this.env.admin;
  }

  get operator(): Operator {
    if (!this.running) throw new Error('no operator is running');
    return this.running.operator;
  }

  private async init(): Promise<void> {
    this.plane = await testEnv();
    await this.plane.installCrds(gitopsReverserCrds());
    this.scratch = await mkdtemp(join(tmpdir(), 'gitops-reverser-e2e-'));
    this.operatorNamespace = await this.fileNamespace('gr-operator');
    await this.startOperator();
  }

  async startOperator(extra: Partial<OperatorOptions> = {}): Promise<Operator> {
    const logs = this.logs;
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(line);
        done();
      },
    });
    const client = await KubeClient.load(this.env.kubeconfigPath);
    const operator = createOperator({
      client,
      operatorNamespace: this.operatorNamespace,
      workDir: await mkdtemp(join(this.scratch, 'work-')),
      allowedProtocols: ['file', 'http', 'https', 'ssh'],
      retry: { baseMs: 200, maxMs: 2_000, replayBaseMs: 50 },
      resyncMs: 3_000,
      logger: pino({ level: 'debug', base: { operator: 'gitops-reverser' } }, stream),
      ...this.options,
      ...extra,
    });
    await operator.manager.start();
    this.running = {
      operator,
      stop: async () => {
        await operator.manager.stop();
        await client.transport.close();
      },
    };
    return operator;
  }

  async stopOperator(): Promise<void> {
    await this.running?.stop();
    this.running = undefined;
  }

  /** A namespace for the whole file. */
  async fileNamespace(prefix: string, labels?: Record<string, string>): Promise<string> {
    const ns = await this.env.namespace(
      { after: (fn: () => Promise<void>) => void this.cleanups.push(fn) },
      prefix,
    );
    if (labels) await this.labelNamespace(ns, labels);
    return ns;
  }

  async namespace(
    t: { after: (fn: () => Promise<void>) => void },
    prefix: string,
    labels?: Record<string, string>,
  ): Promise<string> {
    const ns = await this.env.namespace(t, prefix);
    if (labels) await this.labelNamespace(ns, labels);
    return ns;
  }

  async labelNamespace(ns: string, labels: Record<string, string | null>): Promise<void> {
    await this.admin.patch({ apiVersion: 'v1', kind: 'Namespace' }, ns, undefined, {
      type: 'merge',
      body: { metadata: { labels } },
    });
  }

  /** A fresh bare repository (`main` unborn) and its file:// URL. */
  async bareRepo(name: string): Promise<{ path: string; url: string }> {
    const path = await initBare(await mkdtemp(join(this.scratch, `${name}-`)));
    return { path, url: `file://${path}` };
  }

  async create(
    gvk: GroupVersionKind,
    ns: string | undefined,
    name: string,
    spec: Record<string, unknown>,
  ): Promise<Obj> {
    if (!ns) this.clusterScoped.push({ gvk, name });
    return this.admin.create({ ...gvk, metadata: { name, ...(ns ? { namespace: ns } : {}) }, spec } as Obj);
  }

  /** A fresh namespace and a ClusterProvider `cp-<namespace>` admitting exactly it (by name). */
  async admittedNamespace(
    t: { after: (fn: () => Promise<void>) => void },
    prefix: string,
  ): Promise<{ ns: string; cp: string }> {
    const ns = await this.namespace(t, prefix);
    const cp = `cp-${ns}`;
    await this.clusterProvider(cp, { accessFrom: { names: [ns] } });
    return { ns, cp };
  }

  /** A ClusterProvider of this file (deleted at the end). */
  clusterProvider(name: string, spec: Record<string, unknown>): Promise<Obj> {
    return this.create(CLUSTER_PROVIDER, undefined, name, spec);
  }

  /** A GitProvider over file:// allowing every branch, a GitTarget to it, and a WatchRule of ConfigMaps. */
  async mirrorConfigMaps(
    ns: string,
    opts: {
      clusterProvider: string;
      url: string;
      path?: string;
      target?: string;
      window?: string;
      prune?: string;
      sourceNamespace?: string;
    },
  ): Promise<void> {
    const target = opts.target ?? 'mirror';
    await this.create(GIT_PROVIDER, ns, `${target}-repo`, { url: opts.url, allowedBranches: ['*'] }).catch(
      ignoreExists,
    );
    await this.create(GIT_TARGET, ns, target, {
      providerRef: { name: `${target}-repo` },
      clusterProviderRef: { name: opts.clusterProvider },
      branch: 'main',
      path: opts.path ?? 'live',
      commit: { window: opts.window ?? '0s' },
      ...(opts.prune ? { prune: { mode: opts.prune } } : {}),
    });
    await this.create(WATCH_RULE, ns, `${target}-configmaps`, {
      targetRef: { name: target },
      rules: [
        {
          apiGroups: [''],
          resources: ['configmaps'],
          ...(opts.sourceNamespace ? { sourceNamespace: opts.sourceNamespace } : {}),
        },
      ],
    });
  }

  async get(gvk: GroupVersionKind, ns: string | undefined, name: string): Promise<Obj | undefined> {
    return this.admin.find<Obj>(gvk, name, ns);
  }

  async patchSpec(
    gvk: GroupVersionKind,
    ns: string | undefined,
    name: string,
    spec: Record<string, unknown>,
  ): Promise<Obj> {
    return this.admin.patch<Obj>(gvk, name, ns, { type: 'merge', body: { spec } });
  }

  /** Waits for `type` on the object to have `status` (and `reason`, if given); returns the object. */
  async waitCondition(
    gvk: GroupVersionKind,
    ns: string | undefined,
    name: string,
    type: string,
    status: 'True' | 'False',
    reason?: string,
    timeoutMs = 30_000,
  ): Promise<Obj> {
    let last: Obj | undefined;
    try {
      return await until(
        `${gvk.kind} ${ns ?? ''}/${name} ${type}=${status}${reason ? ` (${reason})` : ''}`,
        async () => {
          last = await this.get(gvk, ns, name);
          const c = condition(last, type);
          return c?.status === status && (!reason || c.reason === reason) ? last : undefined;
        },
        timeoutMs,
      );
    } catch (err) {
      throw new Error(
        `${(err as Error).message}; conditions: ${JSON.stringify(last?.status?.conditions ?? [])}`,
      );
    }
  }

  async close(): Promise<void> {
    await this.stopOperator();
    for (const { gvk, name } of this.clusterScoped.splice(0)) {
      await this.admin.delete(gvk, name).catch(ignoreNotFound);
    }
    for (const fn of this.cleanups.splice(0).reverse()) await fn();
    // A git process the stopped writer started may still be finishing its last write.
    await rm(this.scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}

export function ignoreExists(err: unknown): void {
  if (!isApiError(err, ApiErrorReason.AlreadyExists)) throw err;
}

export function ignoreNotFound(err: unknown): void {
  if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
}

/**
 * The oracle's sanitizer, written out here on purpose (not the operator's): the fields the
 * issue lists as removed, nothing else.
 */
export function naiveSanitize(obj: KubeObject): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(obj)) as Record<string, unknown> & {
    metadata: Record<string, unknown>;
  };
  delete copy.status;
  for (const f of [
    'managedFields',
    'resourceVersion',
    'uid',
    'generation',
    'creationTimestamp',
    'selfLink',
    'deletionTimestamp',
    'ownerReferences',
  ]) {
    delete copy.metadata[f];
  }
  const annotations = copy.metadata.annotations as Record<string, string> | undefined;
  if (annotations) {
    delete annotations['kubectl.kubernetes.io/last-applied-configuration'];
    if (Object.keys(annotations).length === 0) delete copy.metadata.annotations;
  }
  return copy;
}

/** The bare repository's files under `prefix`, parsed as YAML, by path. */
export async function repoDocs(bare: string, prefix: string): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const [path, text] of await treeOf(bare)) if (path.startsWith(prefix)) out.set(path, parse(text));
  return out;
}
