/**
 * The gate's condition reasons, spelled exactly as gitops-reverser's `authz` package
 * spells them, so that a dashboard or alert written for the Go operator reads ours.
 */

/**
 * A GitTarget's referenced ClusterProvider does not exist. A hard gate: a target mirrors
 * only through an existing ClusterProvider, `default` included. The operator never
 * creates one, so a target whose provider was never declared is denied rather than
 * mirroring on an implicit local identity.
 */
export const ReasonClusterProviderNotFound = 'ClusterProviderNotFound';

/**
 * The GitTarget's namespace is not admitted by its ClusterProvider's `spec.accessFrom`,
 * including when that policy carries a selector the apiserver stored but that does not
 * convert to a selector.
 */
export const ReasonNamespaceNotAuthorized = 'NamespaceNotAuthorized';

/**
 * The object (or the ClusterProvider it goes through) still stores a field that a later
 * API replaced. The field stays in the schema so old objects can be read, but its old
 * meaning is not honoured silently: the owner removes it and uses the replacement.
 */
export const ReasonSupersededFieldStored = 'SupersededFieldStored';

/**
 * WatchRule `SourceNamespaceAuthorized=True`: every item watches the rule's own
 * namespace, so no authorization was needed and no ClusterProvider was read.
 */
export const ReasonLegacySourceNamespace = 'LegacySourceNamespace';

/**
 * WatchRule `SourceNamespaceAuthorized=True`: at least one item watches another
 * namespace (a name or the `*` wildcard) and every item passed the gate.
 */
export const ReasonSourceNamespaceAllowed = 'SourceNamespaceAllowed';

/**
 * WatchRule `SourceNamespaceAuthorized=False`, terminal: the ClusterProvider does not
 * exist, does not admit the GitTarget's namespace, or does not set
 * `spec.allowAnySourceNamespace`. A decision, never an inability to decide: the rule
 * stalls until its spec or the policy changes.
 */
export const ReasonSourceNamespaceNotAllowed = 'SourceNamespaceNotAllowed';
