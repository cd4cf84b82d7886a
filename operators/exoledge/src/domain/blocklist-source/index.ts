/**
 * The BlocklistSource's decisions, pure: when to read the list (`decideRead`), what to
 * publish and how to get there from what is live (`publishedSet`, `planPublication`),
 * and what the status says (`nextStatus`), with the closed sets of reasons. The
 * reconciler in `controllers/blocklist-source.ts` reads, calls these, and applies.
 */
export { cleanedUpEvent, publicationEvents, readFailedEvent } from './events.ts';
export {
  ANNOTATION_SPEC_HASH,
  cidrGroup,
  cidrGroupName,
  DECIDER_DATA_KEY,
  DECIDER_SHARD_SIZE,
  deciderConfigMap,
  deciderConfigMapName,
  denyPolicy,
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
  publishedComplete,
  publishedSet,
  type SourceRef,
  shardPrefixes,
  shardSizeOf,
  sourceSelector,
} from './publication.ts';
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
export { nextStatus, type PublicationOutcome, rfc3339, type StatusInput, sameJson } from './status.ts';
