/** The ClusterProvider namespace-admission gate: one decision for every call site. */
export { ADMITTED, type Decision, denied } from './decision.ts';
export {
  admittedBy,
  clusterProviderName,
  DEFAULT_CLUSTER_PROVIDER,
  type GitTargetRef,
  gitTargetAdmitted,
  providerNotFoundMessage,
} from './git-target-admitted.ts';
export {
  accessFromAdmits,
  type ClusterProviderPolicy,
  invalidSelectorMessage,
  notPermittedMessage,
} from './policy.ts';
export { type AuthzReader, GateReadError } from './reader.ts';
export * from './reasons.ts';
export {
  CLUSTER_SCOPE_ONLY_MESSAGE,
  type ClusterWatchRuleVerdict,
  clusterWatchRuleGate,
  ReasonClusterScopeOnly,
  ReasonGitTargetNamespaceNotAuthorized,
  watchRuleTargetGate,
} from './rule-target.ts';
export {
  ANY_NAMESPACE,
  ResolvedSourceScope,
  resolveWatchRuleSourceScope,
  type SourceNamespaceDecision,
  type WatchRuleItems,
} from './source-scope.ts';
export {
  type SupersedingKind,
  type SupersedingObject,
  storedSupersededFields,
  supersededFieldRefusal,
} from './superseded.ts';
