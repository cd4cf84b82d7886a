/**
 * kstatus for every kind: a verdict becomes Ready, Reconciling and Stalled together
 * (plus the kind's own conditions), written only when something changed, with a Warning
 * Event when an object turns not-ready for a new reason.
 */
import {
  applyStatusIfChanged,
  type Clock,
  type Condition,
  type ConditionUpdate,
  type EventRecorder,
  EventType,
  type GroupVersionKind,
  type KubeClient,
  type KubeObject,
  withConditions,
} from '@operators/kit';
import { ConditionType } from '../domain/reasons.ts';

/** The operator's field manager for status writes. */
export const FIELD_MANAGER = 'gitops-reverser';

/** Where an object stands. */
export type Verdict =
  | { readonly kind: 'ready'; readonly reason: string; readonly message: string }
  /** Not ready; `stalled`: only a spec or policy change helps; otherwise work is under way or retried. */
  | {
      readonly kind: 'not-ready';
      readonly reason: string;
      readonly message: string;
      readonly stalled: boolean;
    }
  | { readonly kind: 'progressing'; readonly reason: string; readonly message: string };

export function kstatus(v: Verdict, generation: number | undefined): ConditionUpdate[] {
  const g = generation === undefined ? {} : { observedGeneration: generation };
  const ready: ConditionUpdate = {
    type: ConditionType.Ready,
    status: v.kind === 'ready' ? 'True' : v.kind === 'progressing' ? 'Unknown' : 'False',
    reason: v.reason,
    message: v.message,
    ...g,
  };
  const reconciling: ConditionUpdate =
    v.kind === 'progressing' || (v.kind === 'not-ready' && !v.stalled)
      ? { type: ConditionType.Reconciling, status: 'True', reason: v.reason, message: v.message, ...g }
      : { type: ConditionType.Reconciling, status: 'False', reason: v.reason, message: '', ...g };
  const stalled: ConditionUpdate =
    v.kind === 'not-ready' && v.stalled
      ? { type: ConditionType.Stalled, status: 'True', reason: v.reason, message: v.message, ...g }
      : { type: ConditionType.Stalled, status: 'False', reason: v.reason, message: '', ...g };
  return [ready, reconciling, stalled];
}

type WithStatus = KubeObject & { readonly status?: { readonly conditions?: readonly Condition[] } };

/** Writes the conditions (and `extra` status fields); a Warning Event when Ready turns False for a new reason. */
export async function publish(
  deps: { client: KubeClient; recorder: EventRecorder; clock: Clock },
  gvk: GroupVersionKind,
  obj: WithStatus,
  verdict: Verdict,
  extra: { readonly conditions?: readonly ConditionUpdate[]; readonly fields?: Record<string, unknown> } = {},
): Promise<void> {
  const was = obj.status?.conditions?.find((c) => c.type === ConditionType.Ready);
  if (verdict.kind === 'not-ready' && !(was?.status === 'False' && was.reason === verdict.reason)) {
    deps.recorder.event(obj, {
      type: EventType.Warning,
      reason: verdict.reason,
      action: 'Reconcile',
      note: verdict.message,
    });
  }
  const conditions = withConditions(
    obj.status?.conditions,
    [...kstatus(verdict, obj.metadata.generation), ...(extra.conditions ?? [])],
    new Date(deps.clock.now()),
  );
  const status: Record<string, unknown> = {
    ...(obj.status ?? {}),
    ...(extra.fields ?? {}),
    observedGeneration: obj.metadata.generation,
    conditions,
  };
  await applyStatusIfChanged(
    deps.client,
    gvk,
    obj as KubeObject & { status?: Record<string, unknown> },
    status,
    FIELD_MANAGER,
  );
}

export function errorMessage(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m.length > 1000 ? `${m.slice(0, 1000)}…` : m;
}
