/**
 * The TerdutEscalationRule reconciler (DESIGN §4.3, §5): one policy per team, set by the
 * oldest rule naming the team (the others say PolicyConflict and never PUT, so two rules
 * cannot tug the policy back and forth); usernames resolved at apply time; the whole
 * policy PUT only when the server's differs. Deleting the rule PUTs an empty policy,
 * unless another rule takes the team over.
 */
import { type Controller, EventType, type Manager } from '@operators/kit';
import { TERDUT_ESCALATION_RULE, type TerdutEscalationRule } from '../api/terdut-escalation-rule.ts';
import { TerdutApiError } from '../client/terdut-api.ts';
import {
  desiredPolicy,
  EMPTY_POLICY,
  policyHolder,
  type RuleIdentity,
  samePolicy,
} from '../domain/escalation.ts';
import { ConditionType, EventReason, Reason } from '../domain/reasons.ts';
import { addChildController, type SharedCaches } from './child-controller.ts';
import { errorMessage, type TerdutControllerOptions } from './common.ts';

const identity = (r: TerdutEscalationRule): RuleIdentity => ({
  name: r.metadata.name ?? '',
  teamRef: r.spec.teamRef.name,
  createdAt: r.metadata.creationTimestamp ?? '',
  deleting: r.metadata.deletionTimestamp !== undefined,
});

export function addTerdutEscalationRuleController(
  manager: Manager,
  shared: SharedCaches,
  opts: TerdutControllerOptions,
): Controller<TerdutEscalationRule> {
  return addChildController<TerdutEscalationRule>(manager, shared, opts, {
    name: 'terdutescalationrule',
    gvk: TERDUT_ESCALATION_RULE,
    // A rule that goes or arrives changes which rule holds the team: its siblings decide again.
    siblingsMatter: true,

    async precheck(rule, tools, ctx) {
      const team = rule.spec.teamRef.name;
      const holder = policyHolder(team, tools.siblings(rule).map(identity));
      if (holder === rule.metadata.name) return undefined;
      const message = `TerdutEscalationRule ${holder} already sets the policy of team ${team} (one rule per team): delete one of them`;
      const was = rule.status?.conditions?.find((c) => c.type === ConditionType.Ready)?.reason;
      if (was !== Reason.PolicyConflict) {
        tools.recorder.event(rule, {
          type: EventType.Warning,
          reason: Reason.PolicyConflict,
          action: 'Apply',
          note: message,
        });
      }
      await tools.write(ctx, rule, {}, { ok: false, reason: Reason.PolicyConflict, message });
      return { requeueAfterMs: tools.resyncMs };
    },

    async apply(rule, { api, teamID, serverKey }, ctx, tools) {
      const { recorder } = tools;
      try {
        const desired = desiredPolicy(rule.spec, await api.listUsers());
        if (desired.kind === 'UnknownUsers') {
          const message = `no user named ${desired.usernames.join(', ')} on ${serverKey}: create the user or fix spec.levels[].targets[].username`;
          const was = rule.status?.conditions?.find((c) => c.type === ConditionType.Ready)?.message;
          if (was !== message)
            recorder.event(rule, {
              type: EventType.Warning,
              reason: Reason.UnknownUser,
              action: 'Apply',
              note: message,
            });
          await tools.write(ctx, rule, {}, { ok: false, reason: Reason.UnknownUser, message });
          return { requeueAfterMs: Math.min(tools.resyncMs, 30_000) };
        }
        if (desired.kind === 'InvalidDuration') {
          const message = `spec.levels[${desired.level}].timeout: "${desired.timeout}" is not a positive duration such as 5m`;
          await tools.write(ctx, rule, {}, { ok: false, reason: Reason.ServerError, message });
          return { requeueAfterMs: tools.resyncMs };
        }
        const current = await api.getEscalation(teamID);
        if (!samePolicy(current, desired.policy)) {
          await api.putEscalation(teamID, desired.policy);
          recorder.event(rule, {
            type: EventType.Normal,
            reason: EventReason.Updated,
            action: 'PutPolicy',
            note: `policy of team ${teamID} set: ${desired.policy.levels.length} levels, ${desired.policy.repeat_count} repeats`,
          });
        }
      } catch (err) {
        if (!(err instanceof TerdutApiError)) throw err;
        recorder.event(rule, {
          type: EventType.Warning,
          reason: EventReason.SyncFailed,
          action: 'PutPolicy',
          note: errorMessage(err),
        });
        await tools.write(
          ctx,
          rule,
          {},
          { ok: false, reason: Reason.ServerError, message: errorMessage(err) },
        );
        throw err;
      }
      await tools.write(
        ctx,
        rule,
        { teamID },
        { ok: true, reason: Reason.Synced, message: `policy of team ${teamID} on ${serverKey}` },
      );
      return { requeueAfterMs: tools.resyncMs };
    },

    // Only the rule that set the policy empties it, and only when no other rule takes the team over.
    hasServerSide(rule, tools) {
      if (rule.status?.teamID === undefined) return false;
      const team = rule.spec.teamRef.name;
      const all = tools.siblings(rule).map(identity);
      const me = rule.metadata.name ?? '';
      const heldByMe =
        policyHolder(
          team,
          all.map((r) => (r.name === me ? { ...r, deleting: false } : r)),
        ) === me;
      return heldByMe && policyHolder(team, all) === undefined;
    },

    describe: () => 'the escalation policy',
    remove: (_, { api, teamID }) => api.putEscalation(teamID, EMPTY_POLICY).then(() => undefined),
  });
}
