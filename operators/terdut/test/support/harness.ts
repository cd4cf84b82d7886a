/**
 * terdut-operator on the real apiserver, against terdut-server STAND-INS (ours,
 * contract-faithful; the real server is not public): one stand-in per TerdutServer, so
 * that tests cannot see each other's teams. The operator runs in this process, its log
 * lines captured (tests grep them for every key a stand-in issued), its calls to the
 * stand-ins counted. Expected values come from the stand-in's own API (read with raw
 * fetch, not the operator's client) or are written out in the test.
 *
 * The operator can be stopped and another started on the same plane and stand-ins (a
 * restart). Every object a file creates is deleted through the operator's finalizers
 * when the file ends, so the next file's operator does not inherit it.
 */
import { Writable } from 'node:stream';
import { after, before } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  ApiErrorReason,
  type Clock,
  type Condition,
  type GroupVersionKind,
  isApiError,
  KubeClient,
  type KubeObject,
  realClock,
} from '@operators/kit';
import pino from 'pino';
import { TERDUT_ALERT_SOURCE, terdutAlertSourceCrd } from '../../src/api/terdut-alert-source.ts';
import { TERDUT_DEADMAN_SWITCH, terdutDeadmanSwitchCrd } from '../../src/api/terdut-deadman-switch.ts';
import { TERDUT_ESCALATION_RULE, terdutEscalationRuleCrd } from '../../src/api/terdut-escalation-rule.ts';
import {
  TERDUT_SERVER,
  type TerdutServer,
  type TerdutServerStatus,
  terdutServerCrd,
} from '../../src/api/terdut-server.ts';
import { TERDUT_TEAM, terdutTeamCrd } from '../../src/api/terdut-team.ts';
import type { TerdutControllerOptions } from '../../src/controllers/common.ts';
import { createOperator, type Operator } from '../../src/operator.ts';
import { type StandIn, type StandInOptions, startStandIn } from '../../src/server/stand-in.ts';

export const KINDS = {
  server: TERDUT_SERVER,
  team: TERDUT_TEAM,
  escalation: TERDUT_ESCALATION_RULE,
  deadman: TERDUT_DEADMAN_SWITCH,
  alertSource: TERDUT_ALERT_SOURCE,
} as const;

export type Obj = KubeObject & {
  spec?: Record<string, unknown>;
  status?: { conditions?: Condition[]; observedGeneration?: number } & Record<string, unknown>;
};

/** An Event as the core API lists it. */
export type CoreEvent = KubeObject & {
  readonly reason?: string;
  readonly type?: string;
  readonly message?: string;
  readonly involvedObject?: { readonly kind?: string; readonly name?: string; readonly namespace?: string };
};

/** One terdut-server call the operator made. */
export interface Call {
  readonly controller: string;
  readonly method: string;
  readonly route: string;
  readonly outcome: string;
}

export interface RunningOperator {
  readonly operator: Operator;
  stop(): Promise<void>;
}

/** The real clock plus an offset a test moves forward ("a day later" costs nothing). */
export class MovableClock implements Clock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  setTimeout = realClock.setTimeout;
  clearTimeout = realClock.clearTimeout;
}

export const condition = (o: Obj | undefined, type: string): Condition | undefined =>
  o?.status?.conditions?.find((c) => c.type === type);

/** Log lines about an object quoted in a wait's timeout: enough to see a retry loop. */
const LOG_LINES_ON_TIMEOUT = 15;

export class Harness {
  private plane: TestEnv | undefined;
  /** Log lines of every operator this harness ran. */
  readonly logs: string[] = [];
  readonly calls: Call[] = [];
  private readonly standIns = new Map<string, StandIn>();
  private readonly created: { gvk: GroupVersionKind; ns: string; name: string }[] = [];
  private running: RunningOperator | undefined;
  private readonly options: Partial<TerdutControllerOptions>;

  private constructor(options: Partial<TerdutControllerOptions>) {
    this.options = options;
  }

  get env(): TestEnv {
    if (!this.plane) throw new Error('the harness is not started (Harness.forFile starts it in before())');
    return this.plane;
  }

  /** On the run's shared plane, or on `env` (a private plane, e.g. with kube-controller-manager). */
  static async start(options: Partial<TerdutControllerOptions> = {}, ownEnv?: TestEnv): Promise<Harness> {
    const h = new Harness(options);
    await h.init(ownEnv);
    return h;
  }

  /** A harness for the whole test file: started in `before`, closed (everything deleted) in `after`. */
  static forFile(options: Partial<TerdutControllerOptions> = {}): Harness {
    const h = new Harness(options);
    before(() => h.init());
    after(() => h.close());
    return h;
  }

  private async init(ownEnv?: TestEnv): Promise<void> {
    this.plane = ownEnv ?? (await testEnv());
    await this.plane.installCrds([
      terdutServerCrd(),
      terdutTeamCrd(),
      terdutEscalationRuleCrd(),
      terdutDeadmanSwitchCrd(),
      terdutAlertSourceCrd(),
    ]);
    await this.startOperator();
  }

  get admin(): KubeClient {
    return this.env.admin;
  }

  /** The stand-in behind TerdutServer ns/name (made on first use, with `opts`: a version, …). */
  async standIn(ns: string, name: string, opts: StandInOptions = {}): Promise<StandIn> {
    const key = `${ns}/${name}`;
    let s = this.standIns.get(key);
    if (!s) {
      s = await startStandIn(opts);
      this.standIns.set(key, s);
    }
    return s;
  }

  async startOperator(extra: Partial<TerdutControllerOptions> = {}): Promise<RunningOperator> {
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
      logger: pino({ level: 'debug', base: { operator: 'terdut-operator' } }, stream),
      resyncMs: 3_000,
      apiTimeoutMs: 2_000,
      ...this.options,
      ...extra,
      serverUrl: (server: TerdutServer, inCluster: string) =>
        this.standIns.get(`${server.metadata.namespace}/${server.metadata.name}`)?.url ?? inCluster,
      onApiCall: (c) => this.calls.push(c),
    });
    await operator.manager.start();
    const running: RunningOperator = {
      operator,
      stop: async () => {
        await operator.manager.stop();
        await client.transport.close();
      },
    };
    this.running = running;
    return running;
  }

  async stopOperator(): Promise<void> {
    await this.running?.stop();
    this.running = undefined;
  }

  private readonly fileCleanups: (() => Promise<void>)[] = [];

  /** A fresh namespace for the whole file (several tests in a row), deleted by `close`. */
  async fileNamespace(prefix: string, labels?: Record<string, string>): Promise<string> {
    const ns = await this.env.namespace(
      {
        after: (fn: () => Promise<void>) => {
          this.fileCleanups.push(fn);
        },
      },
      prefix,
    );
    if (labels) await this.labelNamespace(ns, labels);
    return ns;
  }

  /** A fresh namespace with labels, deleted when the test ends. */
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

  async create(
    gvk: GroupVersionKind,
    ns: string,
    name: string,
    spec: Record<string, unknown>,
    metadata: Record<string, unknown> = {},
  ): Promise<Obj> {
    this.created.push({ gvk, ns, name });
    return this.admin.create({ ...gvk, metadata: { ...metadata, name, namespace: ns }, spec } as Obj);
  }

  /** A TerdutServer with a bring-your-own DSN (no password) and its own stand-in. */
  async server(
    ns: string,
    name = 'terdut',
    spec: Record<string, unknown> = {},
    standIn: StandInOptions = {},
  ): Promise<StandIn> {
    const s = await this.standIn(ns, name, standIn);
    await this.create(TERDUT_SERVER, ns, name, {
      database: { dsn: `postgres://terdut@${name}-db:5432/terdut` },
      ...spec,
    });
    return s;
  }

  async get(gvk: GroupVersionKind, ns: string, name: string): Promise<Obj | undefined> {
    return this.admin.find<Obj>(gvk, name, ns);
  }

  async patchSpec(
    gvk: GroupVersionKind,
    ns: string,
    name: string,
    spec: Record<string, unknown>,
  ): Promise<Obj> {
    return this.admin.patch<Obj>(gvk, name, ns, { type: 'merge', body: { spec } });
  }

  async delete(gvk: GroupVersionKind, ns: string, name: string): Promise<void> {
    try {
      await this.admin.delete(gvk, name, ns);
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
    }
  }

  /** Waits until `pred` holds of the object. */
  async until(
    gvk: GroupVersionKind,
    ns: string,
    name: string,
    what: string,
    pred: (o: Obj) => boolean,
    timeoutMs = 20_000,
  ): Promise<Obj> {
    try {
      return await eventually(
        `${gvk.kind} ${ns}/${name}: ${what}`,
        async () => {
          const o = await this.get(gvk, ns, name);
          return o && pred(o) ? o : undefined;
        },
        timeoutMs,
      );
    } catch (err) {
      // A timeout in CI leaves only its output behind: say what the operator did with the object.
      const about = this.logs.filter((l) => l.includes(`"${ns}/${name}"`)).slice(-LOG_LINES_ON_TIMEOUT);
      const seen = JSON.stringify((await this.get(gvk, ns, name).catch(() => undefined))?.status);
      throw new Error(
        `${err instanceof Error ? err.message : String(err)}\nits status: ${seen}\nthe operator's last ${about.length} log lines about it:\n${about.join('\n')}`,
        { cause: err },
      );
    }
  }

  /** Ready=True for the current generation, observedGeneration caught up. */
  ready(gvk: GroupVersionKind, ns: string, name: string, timeoutMs = 20_000): Promise<Obj> {
    return this.until(
      gvk,
      ns,
      name,
      'Ready',
      (o) => {
        const r = condition(o, 'Ready');
        return r?.status === 'True' && o.status?.observedGeneration === o.metadata.generation;
      },
      timeoutMs,
    );
  }

  /** Ready=False with this reason. */
  notReady(
    gvk: GroupVersionKind,
    ns: string,
    name: string,
    reason: string,
    timeoutMs = 20_000,
  ): Promise<Obj> {
    return this.until(
      gvk,
      ns,
      name,
      `Ready=False ${reason}`,
      (o) => {
        const r = condition(o, 'Ready');
        return r?.status === 'False' && r.reason === reason;
      },
      timeoutMs,
    );
  }

  async gone(gvk: GroupVersionKind, ns: string, name: string, timeoutMs = 20_000): Promise<void> {
    await eventually(
      `${gvk.kind} ${ns}/${name} gone`,
      async () => ((await this.get(gvk, ns, name)) ? undefined : true),
      timeoutMs,
    );
  }

  async events(ns: string, name?: string): Promise<CoreEvent[]> {
    const list = await this.admin.list<CoreEvent>({ apiVersion: 'v1', kind: 'Event' }, { namespace: ns });
    return list.items.filter((e) => name === undefined || e.involvedObject?.name === name);
  }

  async eventWith(ns: string, name: string, reason: string): Promise<CoreEvent> {
    return eventually(`an Event ${reason} on ${ns}/${name}`, async () =>
      (await this.events(ns, name)).find((e) => e.reason === reason),
    );
  }

  /** The operator's key for a server, read from its credentials Secret. */
  async operatorKey(ns: string, server = 'terdut'): Promise<string> {
    const s = await this.admin.get<KubeObject & { data?: Record<string, string> }>(
      { apiVersion: 'v1', kind: 'Secret' },
      `${server}-operator-credentials`,
      ns,
    );
    return Buffer.from(s.data?.apiKey ?? '', 'base64').toString('utf8');
  }

  /** Deletes what the file created (children, teams, servers), through the operator, then stops it all. */
  async close(): Promise<void> {
    if (!this.plane) return;
    const order = [
      TERDUT_ALERT_SOURCE,
      TERDUT_DEADMAN_SWITCH,
      TERDUT_ESCALATION_RULE,
      TERDUT_TEAM,
      TERDUT_SERVER,
    ];
    if (!this.running) await this.startOperator();
    for (const s of this.standIns.values()) {
      s.clearFaults();
      await s.start().catch(() => undefined);
    }
    for (const gvk of order) {
      const mine = this.created.filter((c) => c.gvk.kind === gvk.kind);
      await Promise.all(mine.map((c) => this.delete(c.gvk, c.ns, c.name)));
      await Promise.all(
        mine.map((c) => this.gone(c.gvk, c.ns, c.name, 30_000).catch(() => this.forget(c.gvk, c.ns, c.name))),
      );
    }
    await this.stopOperator();
    for (const s of this.standIns.values()) await s.close();
    for (const c of this.fileCleanups) await c();
  }

  /** Last resort at teardown: lift our finalizer so the next file starts clean. */
  private async forget(gvk: GroupVersionKind, ns: string, name: string): Promise<void> {
    await this.admin
      .patch(gvk, name, ns, { type: 'merge', body: { metadata: { finalizers: null } } })
      .catch(() => undefined);
  }
}

/** A raw call to a stand-in, as an independent client: fetch, bearer key, JSON. */
export async function serverGet<T>(standIn: StandIn, path: string, key: string): Promise<T> {
  const res = await fetch(`${standIn.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export async function serverCall(
  standIn: StandIn,
  method: string,
  path: string,
  key: string | undefined,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${standIn.url}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

/** A TerdutServer's status.operatorCredentials. */
export const credsOf = (o: Obj | undefined): NonNullable<TerdutServerStatus['operatorCredentials']> =>
  (o?.status?.operatorCredentials ?? {}) as NonNullable<TerdutServerStatus['operatorCredentials']>;
