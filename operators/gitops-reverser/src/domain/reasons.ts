/**
 * Condition types and reasons of every gitops-reverser kind, besides the gate's own
 * (`domain/authz/reasons.ts`, re-exported here so a reader finds all of them in one
 * place). Each is a named constant with what it means and what to do; the docs page's
 * tables are checked against this file by a test.
 */
export {
  ReasonClusterProviderNotFound,
  ReasonLegacySourceNamespace,
  ReasonNamespaceNotAuthorized,
  ReasonSourceNamespaceAllowed,
  ReasonSourceNamespaceNotAllowed,
  ReasonSupersededFieldStored,
} from './authz/reasons.ts';

export const ConditionType = {
  /** kstatus: the object does what its spec asks. */
  Ready: 'Ready',
  /** kstatus: work is under way (a first sync, a retry); not an error by itself. */
  Reconciling: 'Reconciling',
  /** kstatus: the object cannot progress until its spec or a policy changes. */
  Stalled: 'Stalled',
  /** GitTarget: the gate and the references admit it; False carries the gate's reason before any watch is declared. */
  Validated: 'Validated',
  /** GitTarget: every stream of its rules is watching. */
  StreamsRunning: 'StreamsRunning',
  /** GitTarget: its path overlaps no earlier target's on the same provider and branch. */
  GitPathAccepted: 'GitPathAccepted',
  /** WatchRule and ClusterWatchRule: the GitTarget they route to exists and is admitted. */
  GitTargetReady: 'GitTargetReady',
  /** WatchRule: the gate's per-rule verdict (seed: SourceNamespaceAuthorized). */
  SourceNamespaceAuthorized: 'SourceNamespaceAuthorized',
  /** CommitRequest: the commit is in the remote. */
  Pushed: 'Pushed',
} as const;

export const Reason = {
  /** Ready=True on a GitTarget: streams run and every change reaches the branch. */
  Mirroring: 'Mirroring',
  /** Work under way (Reconciling=True), e.g. the first snapshot of a stream. */
  Progressing: 'Progressing',
  /** Ready=True on a ClusterProvider, GitProvider, WatchRule or ClusterWatchRule. */
  Ready: 'Ready',
  /** The GitTarget names a GitProvider that does not exist in its namespace. */
  GitProviderNotFound: 'GitProviderNotFound',
  /** The GitProvider is not usable (its Secret, its remote, a superseded field): the GitTarget writes nothing. */
  GitProviderNotReady: 'GitProviderNotReady',
  /** spec.branch matches none of the GitProvider's spec.allowedBranches. */
  BranchNotAllowed: 'BranchNotAllowed',
  /** The path nests in, or contains, an earlier GitTarget's on the same provider and branch. */
  PathOverlap: 'PathOverlap',
  /** The ClusterProvider's kubeconfig Secret is missing, does not parse, or is refused (exec plugins, file references). */
  KubeConfigInvalid: 'KubeConfigInvalid',
  /** The ClusterProvider exists but cannot be used (its kubeconfig): the GitTarget streams nothing. */
  ClusterProviderNotReady: 'ClusterProviderNotReady',
  /** A stream failed against the source cluster (a 403 from the credential's RBAC, a kind not served). */
  StreamsBlocked: 'StreamsBlocked',
  /** A rule names a resource the source cluster does not serve in the rule's scope. */
  ResourceNotFound: 'ResourceNotFound',
  /** A Secret was selected but the GitTarget has no spec.encryption: Secrets are never written in plaintext. */
  EncryptionRequired: 'EncryptionRequired',
  /** The GitProvider's Secret (or known-hosts Secret) is missing or lacks its keys. */
  CredentialsNotFound: 'CredentialsNotFound',
  /** The remote refused the credentials or the host key. */
  AuthFailed: 'AuthFailed',
  /** The remote could not be reached. */
  Unreachable: 'Unreachable',
  /** A push or fetch failed for another reason; the changes wait and are retried. */
  PushFailed: 'PushFailed',
  /** The rule's GitTarget does not exist. */
  GitTargetNotFound: 'GitTargetNotFound',
  /** ClusterWatchRule: its target's namespace is not admitted by the target's ClusterProvider. */
  GitTargetNamespaceNotAuthorized: 'GitTargetNamespaceNotAuthorized',
  /** ClusterWatchRule: a stored item with scope Namespaced (an older API); only cluster-scoped resources are mirrored. */
  ClusterScopeOnly: 'ClusterScopeOnly',
  /** CommitRequest: the target's open window was committed and pushed. */
  Committed: 'Committed',
  /** CommitRequest: no window opened within closeDelaySeconds; nothing to commit (Ready=True). */
  NoWindowInGrace: 'NoWindowInGrace',
  /** CommitRequest: the pending changes were already in the branch; status.sha is its tip. */
  AlreadyPresent: 'AlreadyPresent',
  /** CommitRequest: committing or pushing failed; the changes stay pending for the writer. */
  FinalizeFailed: 'FinalizeFailed',
} as const;

/**
 * Event reasons of their own. Besides these, a Warning Event is recorded whenever an
 * object's Ready turns False for a new reason, with that reason (a gate refusal, a push
 * that fails, a kubeconfig refused): see `controllers/status.ts publish`.
 */
export const EventReason = {
  /** On the GitTarget: commits reached the remote (the note names the newest sha). */
  Committed: 'Committed',
  /** On the GitTarget: its streams stopped after a refusal or revocation; files stay in Git. */
  StreamsStopped: 'StreamsStopped',
} as const;
