/**
 * The shape the three child kinds share, written once: a primary informer indexed by
 * teamRef, a watch on TerdutTeams (a team's ID or consent changing reaches its
 * children), the finalizer, and the two places every child waits on its team — before
 * applying (the Blocked link: a condition, an Event on the transition, a requeue) and
 * before deleting (a team gone took the server-side object with it; a server that cannot
 * be reached keeps the finalizer and says Degraded). Each kind supplies only what it
 * does once connected.
 */
import {
  type Clock,
  type Controller,
  type EventRecorder,
  EventType,
  type GroupVersionKind,
  type KubeObject,
  type Manager,
  type Predicate,
  type ReconcileContext,
  type ReconcileResult,
  type Reflector,
  realClock,
} from '@operators/kit';
import type { CommonStatus, LocalRef } from '../api/common.ts';
import type { TerdutServer } from '../api/terdut-server.ts';
import { TERDUT_TEAM, type TerdutTeam } from '../api/terdut-team.ts';
import { isStatus } from '../client/terdut-api.ts';
import { ConditionType, EventReason, Reason } from '../domain/reasons.ts';
import { type ChildLink, childStatus, connectChild } from './child.ts';
import {
  announce,
  DEFAULT_RESYNC_MS,
  errorMessage,
  markDegraded,
  type TerdutControllerOptions,
  Waiting,
  whenSynced,
  writeStatus,
} from './common.ts';
import { reconcileWithFinalizer } from './finish.ts';

/** A child object: a teamRef in spec, the team's ID in status. */
export type ChildObject = KubeObject & {
  readonly spec: { readonly teamRef: LocalRef };
  readonly status?: CommonStatus & { readonly teamID?: number };
};

export type Connected = Extract<ChildLink, { kind: 'Connected' }>;

export interface ReadyState {
  readonly ok: boolean;
  readonly reason: string;
  readonly message: string;
}

/** What a kind's code is given besides its object and link. */
export interface ChildTools<T extends ChildObject> {
  readonly recorder: EventRecorder;
  readonly clock: Clock;
  readonly resyncMs: number;
  /** The kind's objects naming the same team (this one included). */
  siblings(obj: T): readonly T[];
  /** Another object of the kind whose status holds server object `id` of team `teamID`: a name conflict, not ours to adopt. */
  holder(obj: T, id: number, teamID: number, idOf: (o: T) => number | undefined): T | undefined;
  /** Writes status (Ready and Synced from `ready`; observedGeneration only when ok) if it changed. */
  write(
    ctx: ReconcileContext,
    obj: T,
    patch: Partial<NonNullable<T['status']>>,
    ready: ReadyState,
  ): Promise<void>;
  /** A failed delete: Degraded and a Warning Event. */
  degraded(ctx: ReconcileContext, obj: T, reason: string, message: string): Promise<void>;
}

export interface ChildKind<T extends ChildObject> {
  /** The controller's name, also on every server call it makes. */
  readonly name: string;
  readonly gvk: GroupVersionKind;
  /** Kinds it owns (an alert source's Secret), watched with these informer options. */
  readonly owns?: readonly { readonly gvk: GroupVersionKind; readonly labelSelector?: string }[];
  /** Whether changes of a sibling (another object of this kind, same team) concern this one. */
  readonly siblingsMatter?: boolean;
  /** Before connecting: a refusal of the kind's own (an escalation rule not holding its team). */
  precheck?(obj: T, tools: ChildTools<T>, ctx: ReconcileContext): Promise<ReconcileResult | undefined>;
  /** Connected to the team's server: make the server match the spec. */
  apply(obj: T, link: Connected, ctx: ReconcileContext, tools: ChildTools<T>): Promise<ReconcileResult>;
  /** Whether deleting the object has server-side work (an ID recorded, the policy held). */
  hasServerSide(obj: T, tools: ChildTools<T>): boolean;
  /** The server-side counterpart, for messages: `switch 7`. */
  describe(obj: T): string;
  /** Connected, same team as recorded: remove the server-side counterpart (a 404 counts as done). */
  remove(obj: T, link: Connected): Promise<void>;
}

const BY_TEAM = 'terdut.teamRef';
const WAIT_MS = 5_000;

const teamKeyOf = (o: KubeObject): string =>
  `${o.metadata.namespace}/${(o as ChildObject).spec?.teamRef?.name}`;
const keyOf = (o: KubeObject): string => `${o.metadata.namespace}/${o.metadata.name}`;

/** Only the arrival, departure or deletion of a sibling: its status writes do not concern the others. */
const arrivalsAndDepartures: Predicate = (d) =>
  d.type !== 'updated' || d.old.metadata.deletionTimestamp !== d.object.metadata.deletionTimestamp;

/** The caches every controller resolves the others through (made once, in operator.ts). */
export interface SharedCaches {
  readonly servers: Reflector<TerdutServer>;
  readonly teams: Reflector<TerdutTeam>;
  /** Only the operator's own Secrets: credentials, mirrors, webhook keys. */
  readonly secrets: Reflector<KubeObject>;
}

export function addChildController<T extends ChildObject>(
  manager: Manager,
  shared: SharedCaches,
  opts: TerdutControllerOptions,
  kind: ChildKind<T>,
): Controller<T> {
  const { client, recorder } = manager;
  const clock = opts.clock ?? realClock;
  const resyncMs = opts.resyncMs ?? DEFAULT_RESYNC_MS;
  const objects = manager.cache.informer<T>(kind.gvk);
  objects.store.addIndex(BY_TEAM, (o) => [teamKeyOf(o)]);
  const deps = { client, servers: shared.servers, secrets: shared.secrets, opts, controller: kind.name };

  const tools: ChildTools<T> = {
    recorder,
    clock,
    resyncMs,
    siblings: (obj) => objects.store.byIndex(BY_TEAM, teamKeyOf(obj)) as unknown as T[],
    holder: (obj, id, teamID, idOf) =>
      tools
        .siblings(obj)
        .find((o) => o.metadata.name !== obj.metadata.name && idOf(o) === id && o.status?.teamID === teamID),
    async write(ctx, obj, patch, ready) {
      await writeStatus(ctx.client, kind.gvk, obj, childStatus(obj, patch, ready, clock));
    },
    degraded: (ctx, obj, reason, message) =>
      markDegraded(ctx.client, recorder, kind.gvk, obj, reason, message, clock),
  };

  async function apply(obj: T, ctx: ReconcileContext): Promise<ReconcileResult> {
    const refused = await kind.precheck?.(obj, tools, ctx);
    if (refused) return refused;
    const ns = obj.metadata.namespace ?? '';
    const link = await connectChild(deps, shared.teams, ns, obj.spec.teamRef.name, ctx.signal);
    if (link.kind === 'Blocked') {
      announce(recorder, obj, ConditionType.Ready, link.reason, link.message);
      await tools.write(ctx, obj, {}, { ok: false, reason: link.reason, message: link.message });
      // A revocation is re-checked at the resync (a Namespace label change sends no event here).
      return { requeueAfterMs: link.revoked ? resyncMs : WAIT_MS };
    }
    return kind.apply(obj, link, ctx, tools);
  }

  async function cleanup(obj: T, ctx: ReconcileContext): Promise<void> {
    if (!kind.hasServerSide(obj, tools)) return;
    const ns = obj.metadata.namespace ?? '';
    const link = await connectChild(deps, shared.teams, ns, obj.spec.teamRef.name, ctx.signal, 'cleanup');
    if (link.kind === 'Blocked') {
      if (link.teamGone) return; // The server deleted it with the team.
      const message = `cannot delete ${kind.gvk.kind} ${obj.metadata.name} on the server yet: ${link.message}`;
      await tools.degraded(ctx, obj, link.reason, message);
      throw new Waiting(message, WAIT_MS);
    }
    if (obj.status?.teamID !== link.teamID) return; // It went with an earlier team.
    const what = `${kind.describe(obj)} of team ${link.teamID}`;
    try {
      await kind.remove(obj, link);
    } catch (err) {
      if (isStatus(err, 404)) return;
      await tools.degraded(
        ctx,
        obj,
        Reason.DeleteFailed,
        `removing ${what} failed: ${errorMessage(err)}; retrying`,
      );
      throw err;
    }
    recorder.event(obj, {
      type: EventType.Normal,
      reason: EventReason.Deleted,
      action: 'Delete',
      note: `${what} removed on ${link.serverKey}`,
    });
  }

  let builder = manager
    .controller(kind.name)
    .for<T>(kind.gvk)
    .watches(
      TERDUT_TEAM,
      whenSynced(objects, (t: KubeObject) => objects.store.byIndex(BY_TEAM, keyOf(t)).map(keyOf)),
    );
  for (const o of kind.owns ?? [])
    builder = builder.owns(o.gvk, o.labelSelector ? { labelSelector: o.labelSelector } : {});
  if (kind.siblingsMatter) {
    builder = builder.watches(
      kind.gvk,
      whenSynced(objects, (o: KubeObject) =>
        objects.store
          .byIndex(BY_TEAM, teamKeyOf(o))
          .filter((s) => s.metadata.name !== o.metadata.name)
          .map(keyOf),
      ),
      { predicates: [arrivalsAndDepartures] },
    );
  }
  return builder.withConcurrency(opts.concurrency ?? 4).reconcile(async (req, ctx) => {
    const obj = req.object as T | undefined;
    if (!obj) return {};
    return reconcileWithFinalizer(
      ctx,
      obj,
      (o) => apply(o, ctx),
      (o) => cleanup(o, ctx),
    );
  });
}
