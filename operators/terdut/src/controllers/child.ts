/**
 * What the three child kinds share (DESIGN §5's owner chain): teamRef → the TerdutTeam
 * in the same namespace → its status.teamID and its server link, resolved by each
 * child from the caches, with the team's consent re-checked (a revoked team's children
 * make no call either). Also the Ready and Synced conditions every child reports.
 */
import { type Clock, type Condition, type ConditionUpdate, type Reflector, realClock } from '@operators/kit';
import type { CommonStatus } from '../api/common.ts';
import type { TerdutTeam } from '../api/terdut-team.ts';
import type { TerdutApi } from '../client/terdut-api.ts';
import { ConditionType, Reason } from '../domain/reasons.ts';
import { withConditions } from './common.ts';
import { type ConnectDeps, connect } from './connection.ts';

export type ChildLink =
  | {
      readonly kind: 'Connected';
      readonly api: TerdutApi;
      readonly team: TerdutTeam;
      readonly teamID: number;
      readonly serverKey: string;
    }
  | {
      readonly kind: 'Blocked';
      readonly reason: string;
      readonly message: string;
      readonly revoked: boolean;
      /** The team object is gone: for a finalizer, the server-side object went with the team. */
      readonly teamGone: boolean;
    };

export async function connectChild(
  deps: ConnectDeps,
  teams: Reflector<TerdutTeam>,
  namespace: string,
  teamRef: string,
  signal: AbortSignal,
  purpose: 'change' | 'cleanup' = 'change',
): Promise<ChildLink> {
  const team = teams.store.get(`${namespace}/${teamRef}`) as TerdutTeam | undefined;
  if (!team) {
    return {
      kind: 'Blocked',
      reason: Reason.TeamNotFound,
      message: `no TerdutTeam ${namespace}/${teamRef} (spec.teamRef)`,
      revoked: false,
      teamGone: true,
    };
  }
  const teamID = team.status?.teamID;
  if (teamID === undefined) {
    return {
      kind: 'Blocked',
      reason: Reason.WaitingForTeam,
      message: `TerdutTeam ${teamRef} has no ID on the server yet (its Ready condition says why)`,
      revoked: false,
      teamGone: false,
    };
  }
  const link = await connect(deps, namespace, team.spec.serverRef, signal, purpose);
  if (link.kind === 'Blocked') {
    return {
      kind: 'Blocked',
      reason: link.reason,
      message: `through TerdutTeam ${teamRef}: ${link.message}`,
      revoked: link.revoked,
      teamGone: false,
    };
  }
  if (team.status?.server !== link.serverKey) {
    return {
      kind: 'Blocked',
      reason: Reason.WaitingForTeam,
      message: `TerdutTeam ${teamRef} has not synced with ${link.serverKey} yet`,
      revoked: false,
      teamGone: false,
    };
  }
  return { kind: 'Connected', api: link.api, team, teamID, serverKey: link.serverKey };
}

/** Ready and Synced together, as every child reports them. */
export function childConditions(
  previous: readonly Condition[] | undefined,
  generation: number | undefined,
  ok: boolean,
  reason: string,
  message: string,
  clock: Clock = realClock,
): readonly Condition[] {
  const updates: ConditionUpdate[] = [ConditionType.Ready, ConditionType.Synced].map((type) => ({
    type,
    status: ok ? 'True' : 'False',
    reason,
    message,
    observedGeneration: generation,
  }));
  return withConditions(previous, updates, new Date(clock.now()));
}

/** The status of a child after a reconcile: conditions always, observedGeneration only on success. */
export function childStatus<S extends CommonStatus>(
  obj: { readonly metadata: { readonly generation?: number }; readonly status?: S },
  patch: Partial<S>,
  ready: { readonly ok: boolean; readonly reason: string; readonly message: string },
  clock: Clock,
): S {
  return {
    ...(obj.status as S),
    ...patch,
    conditions: childConditions(
      obj.status?.conditions,
      obj.metadata.generation,
      ready.ok,
      ready.reason,
      ready.message,
      clock,
    ),
    ...(ready.ok ? { observedGeneration: obj.metadata.generation } : {}),
  };
}
