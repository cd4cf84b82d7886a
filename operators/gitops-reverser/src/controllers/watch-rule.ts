/**
 * The WatchRule reconciler: its GitTarget, then the gate's per-item verdict
 * (`resolveWatchRuleSourceScope`) published as SourceNamespaceAuthorized, then the
 * resources its admitted items name. A refused rule stalls: it contributes no stream
 * (the GitTarget's compile skips it) until its spec or the policy changes. ClusterProvider
 * and Namespace events map here, so a tightened policy is seen at once.
 */
import { type Clock, type Controller, type KubeObject, type Manager, realClock } from '@operators/kit';
import { CLUSTER_PROVIDER } from '../api/cluster-provider.ts';
import { GIT_TARGET, type GitTarget } from '../api/git-target.ts';
import { WATCH_RULE, type WatchRule } from '../api/watch-rule.ts';
import {
  clusterProviderName,
  resolveWatchRuleSourceScope,
  watchRuleTargetGate,
} from '../domain/authz/index.ts';
import { ConditionType, Reason } from '../domain/reasons.ts';
import type { CompileReads } from '../mirror/compile.ts';
import type { Caches } from './reads.ts';
import { NAMESPACE_GVK } from './reads.ts';
import { unmatchedResources } from './rule-resources.ts';
import { publish } from './status.ts';

export function addWatchRuleController(
  manager: Manager,
  caches: Caches,
  reads: CompileReads,
  opts: { resyncMs?: number; clock?: Clock } = {},
): Controller<WatchRule> {
  const deps = { client: manager.client, recorder: manager.recorder, clock: opts.clock ?? realClock };
  const rules = caches.watchRules;
  const keysWhere = (pred: (r: WatchRule) => boolean): string[] =>
    rules.store.hasSynced()
      ? (rules.store.list() as WatchRule[])
          .filter(pred)
          .map((r) => `${r.metadata.namespace}/${r.metadata.name}`)
      : [];
  const resync = { requeueAfterMs: opts.resyncMs ?? 60_000 };

  return manager
    .controller('watchrule')
    .for<WatchRule>(WATCH_RULE)
    .watches(GIT_TARGET, (t: KubeObject) =>
      keysWhere(
        (r) => r.metadata.namespace === t.metadata.namespace && r.spec.targetRef.name === t.metadata.name,
      ),
    )
    .watches(CLUSTER_PROVIDER, (cp: KubeObject) =>
      keysWhere((r) => {
        const t = caches.targets.store.hasSynced()
          ? (caches.targets.store.get(`${r.metadata.namespace}/${r.spec.targetRef.name}`) as
              | GitTarget
              | undefined)
          : undefined;
        return t === undefined || clusterProviderName(t) === cp.metadata.name;
      }),
    )
    .watches(NAMESPACE_GVK, (ns: KubeObject) => keysWhere((r) => r.metadata.namespace === ns.metadata.name), {
      metadataOnly: true,
    })
    .withConcurrency(2)
    .reconcile(async (req) => {
      const rule = req.object as WatchRule | undefined;
      if (!rule) return {};
      const ns = rule.metadata.namespace ?? '';
      const target = caches.targets.store.get(`${ns}/${rule.spec.targetRef.name}`) as GitTarget | undefined;
      if (!target) {
        const message = `GitTarget "${rule.spec.targetRef.name}" does not exist in namespace "${ns}"`;
        await publish(
          deps,
          WATCH_RULE,
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
      // The target first (superseded fields, then admission): a refused target mirrors
      // nothing, so no condition of its rules may say otherwise. A failed read throws
      // (requeue), deciding nothing.
      const admission = await watchRuleTargetGate(reads.authz, target);
      if (!admission.allowed) {
        await publish(
          deps,
          WATCH_RULE,
          rule,
          { kind: 'not-ready', reason: admission.reason, message: admission.message, stalled: true },
          {
            conditions: [
              {
                type: ConditionType.GitTargetReady,
                status: 'False',
                reason: admission.reason,
                message: admission.message,
              },
              {
                type: ConditionType.SourceNamespaceAuthorized,
                status: 'False',
                reason: admission.reason,
                message: admission.message,
              },
            ],
          },
        );
        return resync;
      }
      const scope = await resolveWatchRuleSourceScope(reads.authz, rule, target);
      const sourceCondition = {
        type: ConditionType.SourceNamespaceAuthorized,
        status: scope.admitted() ? ('True' as const) : ('False' as const),
        reason: scope.reason,
        message: scope.message,
      };
      const fields = { scopeFingerprint: scope.fingerprint() };
      const targetReady = {
        type: ConditionType.GitTargetReady,
        status: 'True' as const,
        reason: Reason.Ready,
        message: '',
      };
      if (!scope.admitted()) {
        await publish(
          deps,
          WATCH_RULE,
          rule,
          { kind: 'not-ready', reason: scope.reason, message: scope.message, stalled: true },
          {
            conditions: [targetReady, sourceCondition],
            fields,
          },
        );
        return resync;
      }
      // The resources its items name, against the source cluster the target reads.
      const unmatched = await unmatchedResources(
        reads,
        target,
        rule.spec.rules.map((item, i) => ({
          source: `spec.rules[${i}]`,
          scope: 'Namespaced' as const,
          apiGroups: item.apiGroups,
          ...(item.apiVersions ? { apiVersions: item.apiVersions } : {}),
          resources: item.resources,
          namespace: scope.namespacesFor(i)[0] ?? ns,
        })),
      );
      if (unmatched.length > 0) {
        await publish(
          deps,
          WATCH_RULE,
          rule,
          {
            kind: 'not-ready',
            reason: Reason.ResourceNotFound,
            message: unmatched.join('; '),
            stalled: true,
          },
          { conditions: [targetReady, sourceCondition], fields },
        );
        return resync;
      }
      await publish(
        deps,
        WATCH_RULE,
        rule,
        { kind: 'ready', reason: Reason.Ready, message: scope.message },
        {
          conditions: [targetReady, sourceCondition],
          fields,
        },
      );
      return resync;
    });
}
