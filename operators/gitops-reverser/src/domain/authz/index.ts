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
export { accessFromAdmits, type ClusterProviderPolicy, notPermittedMessage } from './policy.ts';
export { type AuthzReader, GateReadError } from './reader.ts';
export * from './reasons.ts';
export {
  ANY_NAMESPACE,
  ResolvedSourceScope,
  resolveWatchRuleSourceScope,
  type SourceNamespaceDecision,
  type WatchRuleItems,
} from './source-scope.ts';
export { type SupersedingKind, storedSupersededFields, supersededFieldRefusal } from './superseded.ts';
