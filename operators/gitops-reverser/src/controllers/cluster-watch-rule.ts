/**
 * The ClusterWatchRule reconciler: its target, then `clusterWatchRuleGate` in the seed's
 * order — the target's superseded fields (SupersededFieldStored), the target's admission
 * (GitTargetNamespaceNotAuthorized: no stream opens for it), the rule's stored scope (a
 * Namespaced item from an older API is ClusterScopeOnly) — then the resources it names.
 */
import { type Clock, type Controller, type KubeObject, type Manager, realClock } from '@operators/kit';
import { CLUSTER_PROVIDER } from '../api/cluster-provider.ts';
import { CLUSTER_WATCH_RULE, type ClusterWatchRule } from '../api/cluster-watch-rule.ts';
import { GIT_TARGET, type GitTarget } from '../api/git-target.ts';
import { clusterWatchRuleGate } from '../domain/authz/index.ts';
import { ConditionType, Reason } from '../domain/reasons.ts';
import type { CompileReads } from '../mirror/compile.ts';
import type { Caches } from './reads.ts';
import { NAMESPACE_GVK } from './reads.ts';
import { unmatchedResources } from './rule-resources.ts';
import { publish } from './status.ts';

export function addClusterWatchRuleController(
  manager: Manager,
  caches: Caches,
  reads: CompileReads,
  opts: { resyncMs?: number; clock?: Clock } = {},
): Controller<ClusterWatchRule> {
  const deps = { client: manager.client, recorder: manager.recorder, clock: opts.clock ?? realClock };
  const rules = caches.clusterWatchRules;
  const all = (): string[] => (rules.store.hasSynced() ? [...rules.store.keys()] : []);
  const resync = { requeueAfterMs: opts.resyncMs ?? 60_000 };

  return manager
    .controller('clusterwatchrule')
    .for<ClusterWatchRule>(CLUSTER_WATCH_RULE)
    .watches(GIT_TARGET, (t: KubeObject) =>
      rules.store.hasSynced()
        ? (rules.store.list() as ClusterWatchRule[])
            .filter(
              (r) =>
                r.spec.targetRef.namespace === t.metadata.namespace &&
                r.spec.targetRef.name === t.metadata.name,
            )
            .map((r) => r.metadata.name ?? '')
        : [],
    )
    .watches(CLUSTER_PROVIDER, all)
    .watches(NAMESPACE_GVK, all, { metadataOnly: true })
    .withConcurrency(2)
    .reconcile(async (req) => {
      const rule = req.object as ClusterWatchRule | undefined;
      if (!rule) return {};
      const { namespace, name } = rule.spec.targetRef;
      const target = caches.targets.store.get(`${namespace}/${name}`) as GitTarget | undefined;
      if (!target) {
        const message = `GitTarget ${namespace}/${name} does not exist`;
        await publish(
          deps,
          CLUSTER_WATCH_RULE,
          rule,
          { kind: 'not-ready', reason: Reason.GitTargetNotFound, message, stalled: false },
          {
            conditions: [
              {
                type: ConditionType.GitTargetReady,
                status: 'False',
                reason: Reason.GitTargetNotFound,
                message,
              },
            ],
          },
        );
        return resync;
      }
      // Superseded → admission → scope, the seed's order; a failed read throws (requeue).
      const gate = await clusterWatchRuleGate(reads.authz, rule, target);
      if (!gate.allowed) {
        await publish(
          deps,
          CLUSTER_WATCH_RULE,
          rule,
          { kind: 'not-ready', reason: gate.reason, message: gate.message, stalled: true },
          {
            conditions: [
              gate.target
                ? {
                    type: ConditionType.GitTargetReady,
                    status: 'False',
                    reason: gate.target.reason,
                    message: gate.target.message,
                  }
                : { type: ConditionType.GitTargetReady, status: 'True', reason: Reason.Ready, message: '' },
            ],
          },
        );
        return resync;
      }
      const targetReady = {
        type: ConditionType.GitTargetReady,
        status: 'True' as const,
        reason: Reason.Ready,
        message: '',
      };
      const unmatched = await unmatchedResources(
        reads,
        target,
        rule.spec.rules.map((item, i) => ({
          source: `spec.rules[${i}]`,
          scope: 'Cluster' as const,
          apiGroups: item.apiGroups,
          ...(item.apiVersions ? { apiVersions: item.apiVersions } : {}),
          resources: item.resources,
          namespace: '',
        })),
      );
      if (unmatched.length > 0) {
        await publish(
          deps,
          CLUSTER_WATCH_RULE,
          rule,
          {
            kind: 'not-ready',
            reason: Reason.ResourceNotFound,
            message: unmatched.join('; '),
            stalled: true,
          },
          { conditions: [targetReady] },
        );
        return resync;
      }
      await publish(
        deps,
        CLUSTER_WATCH_RULE,
        rule,
        { kind: 'ready', reason: Reason.Ready, message: `routes to GitTarget ${namespace}/${name}` },
        {
          conditions: [targetReady],
        },
      );
      return resync;
    });
}
