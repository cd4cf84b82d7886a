/**
 * The BlocklistSource operator on a real apiserver with Cilium's real CRDs (they validate
 * every object we write, field names included), as the end-to-end test files share it.
 * Lists are served by the local list server, a contract-faithful stand-in for list
 * providers: 200 with an ETag, 304 to a matching If-None-Match, any status on demand.
 *
 * Time: the controller takes its refresh decisions on a clock the tests move forward
 * (an offset on the real clock), so that "two hours later" costs nothing; a reconcile is
 * then triggered by touching an annotation of the source.
 *
 * The operator can be stopped and another started on the same plane (a restart, or an
 * operator with other options); every source a file creates is deleted, through the
 * operator's finalizer, when the file ends, so that the next file's operator does not
 * inherit it.
 */
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  type ApplyOptions,
  type Clock,
  type DeleteOptions,
  type GroupVersionKind,
  KubeClient,
  type KubeObject,
  type Patch,
  realClock,
  type WriteOptions,
} from '@operators/kit';
import {
  BLOCKLIST_SOURCE,
  type BlocklistSource,
  type BlocklistSourceSpec,
  blocklistSourceCrd,
} from '../../src/api/blocklist-source.ts';
import {
  CILIUM_CIDR_GROUP,
  CILIUM_CLUSTERWIDE_NETWORK_POLICY,
  type CiliumCidrGroup,
  type CiliumClusterwideNetworkPolicy,
  CONFIG_MAP,
  type ConfigMap,
} from '../../src/api/cilium.ts';
import type { ReconcileReport } from '../../src/controllers/blocklist-source.ts';
import { createOperator, type Operator, type OperatorOptions } from '../../src/operator.ts';
import { type ListServer, startListServer } from '../../src/sample/list-server.ts';

export const HOUR = 3_600_000;
export const MIN = 60_000;

/** The real clock, plus an offset the tests move forward. */
export class MovableClock implements Clock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  setTimeout = realClock.setTimeout;
  clearTimeout = realClock.clearTimeout;
}

/** Counts the operator's writes (events aside: they are the recorder's, not the reconcile's). */
export class CountingClient extends KubeClient {
  readonly writes: string[] = [];
  private note(verb: string, kind: string | undefined, name: string | undefined): void {
    if (kind !== 'Event') this.writes.push(`${verb} ${kind}/${name}`);
  }
  override apply<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T & KubeObject> {
    this.note('apply', obj.kind, obj.metadata.name);
    return super.apply(obj, opts);
  }
  override applyStatus<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T & KubeObject> {
    this.note('applyStatus', obj.kind, obj.metadata.name);
    return super.applyStatus(obj, opts);
  }
  override create<T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<T & KubeObject> {
    this.note('create', obj.kind, obj.metadata.name);
    return super.create(obj, opts);
  }
  override patch<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace: string | undefined,
    patch: Patch,
    opts?: WriteOptions & { subresource?: string },
  ): Promise<T> {
    this.note('patch', gvk.kind, name);
    return super.patch<T>(gvk, name, namespace, patch, opts);
  }
  override delete(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
    opts?: DeleteOptions,
  ): Promise<boolean> {
    this.note('delete', gvk.kind, name);
    return super.delete(gvk, name, namespace, opts);
  }
}

/** An Event as the core API lists it: what a user sees in `kubectl describe`. */
export type CoreEvent = KubeObject & {
  readonly reason?: string;
  readonly type?: string;
  readonly message?: string;
  readonly count?: number;
  readonly involvedObject?: { readonly kind?: string; readonly name?: string; readonly uid?: string };
};

/** One running operator and what it did. */
export interface RunningOperator {
  readonly operator: Operator;
  readonly client: CountingClient;
  readonly reports: ReconcileReport[];
  stop(): Promise<void>;
}

export class Harness {
  readonly env: TestEnv;
  readonly server: ListServer;
  readonly deciderNamespace: string;
  readonly clock = new MovableClock();
  /** The operator the helpers wait on; replaced by `restart`. */
  current: RunningOperator | undefined;
  private readonly sources = new Set<string>();
  private readonly cleanups: (() => Promise<void>)[];
  private counter = 0;

  private constructor(
    env: TestEnv,
    server: ListServer,
    deciderNamespace: string,
    cleanups: (() => Promise<void>)[],
  ) {
    this.env = env;
    this.server = server;
    this.deciderNamespace = deciderNamespace;
    this.cleanups = cleanups;
  }

  /** The shared plane with Cilium's CRDs and ours, a decider namespace and a list server; no operator yet. */
  static async start(): Promise<Harness> {
    const env = await testEnv();
    await env.installThirdParty('cilium');
    await env.installCrds([blocklistSourceCrd()]);
    const cleanups: (() => Promise<void>)[] = [];
    const deciderNamespace = await env.namespace(
      { after: (fn: () => Promise<void>) => cleanups.push(fn) },
      'exoledge-decider',
    );
    const server = await startListServer();
    return new Harness(env, server, deciderNamespace, cleanups);
  }

  /** Starts an operator on the plane with the harness's clock, counting its writes. */
  async startOperator(opts: Partial<Omit<OperatorOptions, 'client'>> = {}): Promise<RunningOperator> {
    const client = new CountingClient(this.env.admin.transport, this.env.admin.discovery);
    const reports: ReconcileReport[] = [];
    const operator = createOperator({
      client,
      deciderNamespace: this.deciderNamespace,
      clock: this.clock,
      onReconciled: (r) => reports.push(r),
      ...opts,
    });
    operator.manager.log.level = process.env.EXOLEDGE_TEST_LOG ?? 'silent';
    await operator.manager.start();
    const running: RunningOperator = {
      operator,
      client,
      reports,
      stop: () => operator.manager.stop(),
    };
    this.current = running;
    return running;
  }

  get op(): RunningOperator {
    if (!this.current) throw new Error('no operator running');
    return this.current;
  }

  /** Deletes every source made here (the operator running removes what they published), then the rest. */
  async close(): Promise<void> {
    for (const name of this.sources) {
      await this.env.admin.delete(BLOCKLIST_SOURCE, name).catch(() => undefined);
    }
    for (const name of this.sources) {
      await eventually(`${name} deleted`, async () =>
        (await this.env.admin.find(BLOCKLIST_SOURCE, name)) ? undefined : true,
      ).catch(() => undefined);
    }
    await this.current?.stop();
    await this.server.close();
    for (const c of this.cleanups) await c();
  }

  uniqueName(prefix: string): string {
    return `${prefix}-${process.pid % 10_000}-${++this.counter}-${Math.random().toString(36).slice(2, 6)}`;
  }

  /** Serves `list` at `/<name>.txt` and creates the source reading it. */
  async createSource(
    name: string,
    list: string,
    spec: Partial<BlocklistSourceSpec>,
  ): Promise<BlocklistSource> {
    this.server.serve(`/${name}.txt`, { body: list });
    this.sources.add(name);
    return this.env.admin.create<BlocklistSource>({
      ...BLOCKLIST_SOURCE,
      metadata: { name },
      spec: { url: this.server.url(`/${name}.txt`), kind: 'Certain', ...spec },
    });
  }

  serve(name: string, list: string): void {
    this.server.serve(`/${name}.txt`, { body: list });
  }

  getSource(name: string): Promise<BlocklistSource> {
    return this.env.admin.get<BlocklistSource>(BLOCKLIST_SOURCE, name);
  }

  /** Waits until the source's current generation is in force with Ready at `reason`. */
  ready(name: string, reason = 'Published'): Promise<BlocklistSource> {
    return eventually(`${name} Ready=${reason}`, async () => {
      const s = await this.getSource(name);
      const c = s.status?.conditions?.find((x) => x.type === 'Ready');
      return c?.reason === reason && c.observedGeneration === s.metadata.generation ? s : undefined;
    });
  }

  listed<T extends KubeObject>(gvk: GroupVersionKind, name: string, namespace?: string): Promise<T[]> {
    return this.env.admin
      .listAll<T>(gvk, {
        labelSelector: `edge.exoledge.io/source=${name}`,
        ...(namespace ? { namespace } : {}),
      })
      .then((l) => l.items.sort((a, b) => shardOf(a) - shardOf(b)));
  }
  groupsOf(name: string): Promise<CiliumCidrGroup[]> {
    return this.listed<CiliumCidrGroup>(CILIUM_CIDR_GROUP, name);
  }
  policiesOf(name: string): Promise<CiliumClusterwideNetworkPolicy[]> {
    return this.listed<CiliumClusterwideNetworkPolicy>(CILIUM_CLUSTERWIDE_NETWORK_POLICY, name);
  }
  configMapsOf(name: string): Promise<ConfigMap[]> {
    return this.listed<ConfigMap>(CONFIG_MAP, name, this.deciderNamespace);
  }

  /** The shards' prefixes in shard order, as the apiserver holds them. */
  async publishedPrefixes(name: string): Promise<string[]> {
    return (await this.groupsOf(name)).flatMap((g) => [...g.spec.externalCIDRs]);
  }

  /** Every published object of the source, `name@resourceVersion`: equal lists mean nothing was written. */
  async versions(name: string): Promise<string[]> {
    return [
      ...(await this.groupsOf(name)),
      ...(await this.policiesOf(name)),
      ...(await this.configMapsOf(name)),
    ].map((o) => `${o.kind}/${o.metadata.name}@${o.metadata.resourceVersion}`);
  }

  /** Makes the controller look at the source now (an annotation touched). */
  async touch(name: string): Promise<void> {
    await this.env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
      type: 'merge',
      body: { metadata: { annotations: { 'test.exoledge.io/touched': `${Date.now()}-${++this.counter}` } } },
    });
  }

  /** Moves time forward by `ms`, then makes the controller look at the source; returns where its reports stand. */
  async later(name: string, ms: number): Promise<number> {
    this.clock.offset += ms;
    const since = this.op.reports.length;
    await this.touch(name);
    return since;
  }

  reportAfter(name: string, since: number, what: (r: ReconcileReport) => boolean): Promise<ReconcileReport> {
    return eventually(`a reconcile of ${name}`, async () =>
      this.op.reports.slice(since).find((r) => r.source === name && what(r)),
    );
  }

  async settled(): Promise<void> {
    const q = this.op.operator.blocklistSources.queue;
    await eventually('the queue to settle', async () => (q.len === 0 && q.inFlight === 0 ? true : undefined));
  }

  /** The core Events about one object (`kubectl describe`), by its UID. */
  async eventsOf(uid: string): Promise<CoreEvent[]> {
    const { items } = await this.env.admin.listAll<CoreEvent>(
      { apiVersion: 'v1', kind: 'Event' },
      { namespace: 'default', fieldSelector: `involvedObject.uid=${uid}` },
    );
    return items;
  }

  /** Waits for an Event of `reason` about the object of `uid`. */
  eventOf(uid: string, reason: string, match: (e: CoreEvent) => boolean = () => true): Promise<CoreEvent> {
    return eventually(`a ${reason} event`, async () =>
      (await this.eventsOf(uid)).find((e) => e.reason === reason && match(e)),
    );
  }
}

function shardOf(o: KubeObject): number {
  const n = Number(o.metadata.labels?.['edge.exoledge.io/shard']);
  return Number.isInteger(n) ? n : -1;
}
