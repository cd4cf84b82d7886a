/**
 * The ClusterWatchRule reconciler: cluster-scoped resources only (a stored Namespaced
 * item, from an older API, is refused with ClusterScopeOnly), and its target gated by
 * `gitTargetAdmitted`: a target in a namespace its ClusterProvider does not admit is
 * GitTargetNamespaceNotAuthorized, and no stream opens for it.
 */
import { type Clock, type Controller, type KubeObject, type Manager, realClock } from '@operators/kit';
import { CLUSTER_PROVIDER } from '../api/cluster-provider.ts';
import { CLUSTER_SCOPE, CLUSTER_WATCH_RULE, type ClusterWatchRule } from '../api/cluster-watch-rule.ts';
import { GIT_TARGET, type GitTarget } from '../api/git-target.ts';
import { gitTargetAdmitted } from '../domain/authz/index.ts';
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
      const stored = rule.spec.rules.findIndex((r) => r.scope !== undefined && r.scope !== CLUSTER_SCOPE);
      if (stored >= 0) {
        const message = `spec.rules[${stored}] has scope "${rule.spec.rules[stored]?.scope}": a ClusterWatchRule mirrors cluster-scoped resources only; use a WatchRule for namespaced ones`;
        await publish(deps, CLUSTER_WATCH_RULE, rule, {
          kind: 'not-ready',
          reason: Reason.ClusterScopeOnly,
          message,
          stalled: true,
        });
        return resync;
      }
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
      const admission = await gitTargetAdmitted(reads.authz, target);
      if (!admission.allowed) {
        const message = `GitTarget ${namespace}/${name}: ${admission.message}`;
        await publish(
          deps,
          CLUSTER_WATCH_RULE,
          rule,
          { kind: 'not-ready', reason: Reason.GitTargetNamespaceNotAuthorized, message, stalled: true },
          {
            conditions: [
              {
                type: ConditionType.GitTargetReady,
                status: 'False',
                reason: admission.reason,
                message: admission.message,
              },
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
