/**
 * The BlocklistSource's decisions, pure: when to read the list (`decideRead`), what to
 * publish and how to get there from what is live (`publishedSet`, `planPublication`),
 * whether it fits in the policy map it shares (`admitToPolicyMap`), and what the status says (`nextStatus`), with the closed sets of reasons. The
 * reconciler in `controllers/blocklist-source.ts` reads, calls these, and applies.
 */
export { cleanedUpEvent, publicationEvents, readFailedEvent } from './events.ts';
export {
  admitToPolicyMap,
  olderThan,
  type PolicyMapClaim,
  type PolicyMapDecision,
  policyMapGroup,
  policyMapPeers,
  selectorKey,
} from './policy-map.ts';
export {
  cidrGroup,
  cidrGroupName,
  DECIDER_DATA_KEY,
  DECIDER_SHARD_SIZE,
  deciderConfigMap,
  deciderConfigMapName,
  denyPolicy,
  FIELD_MANAGER,
  isOurs,
  LABEL_KIND,
  LABEL_MANAGED_BY,
  LABEL_SHARD,
  LABEL_SOURCE,
  type LiveObjects,
  MANAGED_BY,
  type ObjectRef,
  type PublicationInput,
  type PublicationPlan,
  type PublishedSet,
  planPublication,
  policyName,
  publishedSet,
  type SourceRef,
  shardPrefixes,
  shardSizeOf,
  sourceSelector,
} from './publication.ts';
export { type PublishedCheck, type PublishedCheckInput, publishedIntact } from './published-check.ts';
export {
  BudgetReason,
  ConditionType,
  EventReason,
  type ReadFailureReason,
  ReadyReason,
  SourceReadReason,
} from './reasons.ts';
export {
  decideRead,
  type ListData,
  looksLikeBlocklist,
  RETRY_AFTER_FAILURE_MS,
  type ReadDecision,
  type ReadFailure,
  type ReadInput,
  type ReadResult,
  type ReadSummary,
  ReadWhy,
  readSummary,
  remember,
  retryDelayMs,
  type SourceMemory,
  usableData,
  type Validators,
} from './refresh.ts';
export { channelOf, formatDuration, parseDuration, type ResolvedSpec, resolveSpec } from './spec.ts';
export {
  describePolicyMapRefusal,
  nextStatus,
  type PublicationOutcome,
  rfc3339,
  type StatusInput,
  sameJson,
} from './status.ts';
export { repairPatch, type Tamper, TamperReason, tamper } from './tamper.ts';
