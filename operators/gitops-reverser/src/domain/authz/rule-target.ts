/**
 * What a rule may say about its GitTarget: a rule never reports more than its target is.
 * A target the compile refuses mirrors nothing, so its rules must not read Ready,
 * GitTargetReady or SourceNamespaceAuthorized True. The two gates here are the rule-side
 * halves of what `compileTarget` checks, in the seed's (and upstream's) order:
 *
 *  - WatchRule: the target's superseded fields, then the target's admission;
 *  - ClusterWatchRule: the target's superseded fields → the target's admission → the
 *    rule's own stored scope. A refusal about the target comes before one about the rule,
 *    because fixing the rule would not make it mirror anything while the target is refused.
 *
 * A failed read throws a `GateReadError` (no decision), as every gate does.
 */
import type { Decision } from './decision.ts';
import { type GitTargetRef, gitTargetAdmitted } from './git-target-admitted.ts';
import type { AuthzReader } from './reader.ts';
import { supersededFieldRefusal } from './superseded.ts';

/**
 * ClusterWatchRule: its target's namespace is not admitted by the target's ClusterProvider
 * (or that provider does not exist). One rule-side reason for both provider-side causes;
 * the message says which.
 */
export const ReasonGitTargetNamespaceNotAuthorized = 'GitTargetNamespaceNotAuthorized';

/** ClusterWatchRule: a stored item with a scope other than Cluster (an older API). */
export const ReasonClusterScopeOnly = 'ClusterScopeOnly';

/** Upstream's refusal of a stored `scope: Namespaced`, naming the replacement. */
export const CLUSTER_SCOPE_ONLY_MESSAGE =
  'ClusterWatchRule is cluster-scoped only; watch namespaced resources with a WatchRule and `rules[].sourceNamespace`.';

function targetSuperseded(target: GitTargetRef): Decision | undefined {
  return supersededFieldRefusal(
    'GitTarget',
    { namespace: target.metadata.namespace ?? '', name: target.metadata.name ?? '' },
    target.spec,
  );
}

/**
 * The WatchRule's GitTargetReady verdict: refused when the target stores a superseded
 * field (SupersededFieldStored, upstream's message) or is not admitted (the admission's
 * own reason and message). The caller publishes the refusal on SourceNamespaceAuthorized
 * too, as upstream's compile path does, so no condition claims the rule is authorized.
 */
export async function watchRuleTargetGate(reader: AuthzReader, target: GitTargetRef): Promise<Decision> {
  return targetSuperseded(target) ?? (await gitTargetAdmitted(reader, target));
}

/** A ClusterWatchRule's refusal: its Ready reason and message, and what GitTargetReady says. */
export type ClusterWatchRuleVerdict =
  | { readonly allowed: true }
  | {
      readonly allowed: false;
      readonly reason: string;
      readonly message: string;
      /** GitTargetReady=False with this reason and message; undefined: the target is fine (the rule is not). */
      readonly target?: { readonly reason: string; readonly message: string };
    };

/** The ClusterWatchRule gate, in order: superseded → admission → scope. */
export async function clusterWatchRuleGate(
  reader: AuthzReader,
  rule: { readonly spec: { readonly rules: readonly { readonly scope?: string }[] } },
  target: GitTargetRef,
): Promise<ClusterWatchRuleVerdict> {
  const superseded = targetSuperseded(target);
  if (superseded && !superseded.allowed) {
    return { ...superseded, target: { reason: superseded.reason, message: superseded.message } };
  }
  const admission = await gitTargetAdmitted(reader, target);
  if (!admission.allowed) {
    const { namespace, name } = target.metadata;
    return {
      allowed: false,
      reason: ReasonGitTargetNamespaceNotAuthorized,
      message: `ClusterWatchRule may not compile against GitTarget '${namespace}/${name}': ${admission.message}`,
      target: { reason: admission.reason, message: admission.message },
    };
  }
  if (rule.spec.rules.some((r) => r.scope !== undefined && r.scope !== 'Cluster')) {
    return { allowed: false, reason: ReasonClusterScopeOnly, message: CLUSTER_SCOPE_ONLY_MESSAGE };
  }
  return { allowed: true };
}
