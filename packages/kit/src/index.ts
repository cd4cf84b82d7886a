export { Backoff, type BackoffOptions } from './base/backoff.ts';
export { type Clock, FakeClock, realClock, sleep, type TimerHandle } from './base/clock.ts';
export { durationSeconds, parseDurationMs, parseDurationNs } from './base/duration.ts';
export { sharedCounter, sharedGauge, sharedHistogram, sharedMetric } from './base/shared-metrics.ts';
export {
  CachedClient,
  type CachedClientOptions,
  type CachedListOptions,
  DEFAULT_CACHE_READ_TIMEOUT_MS,
  type FieldIndexer,
} from './cache/cached-client.ts';
export { type DeepReadonly, deepFreeze } from './cache/deep-freeze.ts';
export {
  type CacheScope,
  InformerCache,
  type InformerOptions,
  type KindScope,
} from './cache/informer-cache.ts';
export {
  type LabelRequirement,
  type LabelSelector,
  type Labels,
  parseLabelSelector,
} from './cache/label-selector.ts';
export {
  convertLabelSelector,
  type LabelSelectorObject,
  labelKeyError,
  labelValueError,
  type SelectorConversion,
} from './cache/label-selector-object.ts';
export { INITIAL_EVENTS_END_ANNOTATION, type ListMode } from './cache/list-watch.ts';
export {
  type DeltaOrigin,
  type ReadyOptions,
  Reflector,
  type ReflectorHandler,
  type ReflectorHealth,
  type ReflectorOptions,
  type SnapshotHandler,
} from './cache/reflector.ts';
export {
  BY_NAMESPACE,
  BY_OWNER_UID,
  CacheNotSyncedError,
  type IndexFunction,
  Store,
  type StoreDelta,
  type StoreOptions,
} from './cache/store.ts';
export {
  type ApplyOptions,
  type CallOptions,
  type DeleteCollectionOptions,
  type DeleteOptions,
  type FieldValidation,
  gvkOf,
  type JsonPatchOp,
  KubeClient,
  type ListOptions,
  type Patch,
  type WriteOptions,
  withGvk,
} from './client/client.ts';
export type { Credentials, TlsOptions } from './client/credentials.ts';
export { Discovery, resourcePath } from './client/discovery.ts';
export {
  ApiError,
  ApiErrorReason,
  type ApiStatus,
  classifyStatus,
  isApiError,
  type StatusCause,
} from './client/errors.ts';
export {
  InClusterCredentials,
  type InClusterOptions,
  SERVICE_ACCOUNT_DIR,
  TOKEN_REFRESH_MS,
} from './client/in-cluster-credentials.ts';
export { AUTH_TTL_MS, KubeconfigCredentials } from './client/kubeconfig-credentials.ts';
export { loadCredentials } from './client/load-credentials.ts';
export { DEFAULT_CLIENT_RATE_LIMIT, type RateLimit, TokenBucket } from './client/token-bucket.ts';
export {
  type HttpMethod,
  type Impersonation,
  ISOLATED_CONNECTIONS,
  type IsolatedOptions,
  type LoadOptions,
  type RawResponse,
  type RequestOptions,
  Transport,
  type TransportOptions,
} from './client/transport.ts';
export {
  type GroupVersionKind,
  type KubeList,
  type KubeObject,
  type ListMeta,
  type ManagedFieldsEntry,
  type ObjectKey,
  type ObjectMeta,
  type OwnerReference,
  objectKey,
  parseApiVersion,
  type ResourceInfo,
  splitKey,
} from './client/types.ts';
export {
  METADATA_ACCEPT,
  METADATA_LIST_ACCEPT,
  type WatchEvent,
  type WatchOptions,
  watch,
} from './client/watch.ts';
export {
  type CommandLine,
  type CommandLineSpec,
  commandLine,
  commandLineHelp,
  durationMs,
  ExitCode,
  type Flag,
  FlagError,
  type FlagValues,
  flag,
  listFlag,
  type ManagerSettings,
  type ParsedCommandLine,
  parseCommandLine,
  port,
  required,
  switchFlag,
} from './control/command-line.ts';
export {
  Controller,
  ControllerBuilder,
  type ForOptions,
  generationChanged,
  hasLabels,
  type Predicate,
  type ReconcileContext,
  ReconcileOutcome,
  type ReconcileRequest,
  type ReconcileResult,
  type Reconciler,
  TerminalError,
} from './control/controller.ts';
export {
  DEFAULT_METRICS_HOST,
  DEFAULT_METRICS_PORT,
  DEFAULT_PROBE_HOST,
  DEFAULT_PROBE_PORT,
  type MetricsEndpointOptions,
  type ProbeEndpointOptions,
  type SecureMetricsOptions,
} from './control/endpoint.ts';
export {
  type FinalizerReconcileHandlers,
  finalizerReconcile,
} from './control/finalizer-reconcile.ts';
export { CHECK_TIMEOUT_MS, type HealthCheck } from './control/health.ts';
export {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  HoldOutcome,
  LEADER_ELECTION_CONNECTIONS,
  type LeaderElectionOptions,
  type LeaderElectionSettings,
  LeaderElector,
  leaderElectionClient,
  leaseRequestTimeoutMs,
  MIN_LEASE_REQUEST_TIMEOUT_MS,
  RELEASE_TIMEOUT_MS,
  validateLeaderElectionTiming,
} from './control/leader-election.ts';
export {
  DEFAULT_CACHE_SYNC_TIMEOUT_MS,
  Manager,
  type ManagerExit,
  type ManagerOptions,
  STOP_STEP_TIMEOUT_MS,
} from './control/manager.ts';
export {
  BucketRateLimiter,
  type ControllerRateLimiterOptions,
  DEFAULT_RETRY_BURST,
  DEFAULT_RETRY_QPS,
  defaultControllerRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
} from './control/rate-limiter.ts';
export {
  AUTH_CACHE_MAX,
  AUTH_CACHE_TTL_MS,
  type AuthDecision,
  MAX_CONCURRENT_REVIEWS,
  OVERLOADED_RETRY_AFTER_SECONDS,
  REVIEW_RATE_LIMIT,
  REVIEW_TIMEOUT_MS,
  RequestAuthorizer,
  type RequestAuthorizerOptions,
  reviewClient,
} from './control/request-authorizer.ts';
export type { Runnable, RunnableOptions } from './control/runnable.ts';
export type { RunWorkersOptions } from './control/workqueue.ts';
export { runWorkers, Workqueue, type WorkqueueOptions } from './control/workqueue.ts';
export {
  type Condition,
  type ConditionStatus,
  type ConditionUpdate,
  findCondition,
  InvalidConditionError,
  isFalse,
  isTrue,
  removeCondition,
  setCondition,
  validateCondition,
} from './objects/conditions.ts';
export {
  type CrdDefinition,
  type CrdVersion,
  crdYaml,
  customResourceDefinition,
  type JSONSchemaProps,
  type PrinterColumn,
  type ValidationRule,
} from './objects/crd.ts';
export {
  conditionsSchema,
  DNS_LABEL_REGEX,
  DNS_SUBDOMAIN_REGEX,
  LABEL_KEY_REGEX,
  LABEL_VALUE_PATTERN,
  labelSelectorSchema,
  observedGenerationSchema,
} from './objects/crd-schema.ts';
export type { DriftOptions } from './objects/drift.ts';
export { DriftReason, type DriftResult, drift, hasDrifted } from './objects/drift.ts';
export {
  EVENT_FLUSH_TIMEOUT_MS,
  type EventInput,
  type EventObject,
  EventRecorder,
  type EventRecorderOptions,
  EventType,
  microTime,
} from './objects/events.ts';
export {
  type AddFinalizerOptions,
  addFinalizer,
  type FinalizerOutcome,
  type FinalizerStep,
  finalizer,
  finalizerLifecycle,
  removeFinalizer,
  validateFinalizerName,
} from './objects/finalizers.ts';
export type { ControllerClaim } from './objects/owner-references.ts';
export {
  claimController,
  controllerOf,
  controllerReference,
  isControlledBy,
  isOwnedBy,
  ownerReference,
} from './objects/owner-references.ts';
export { applyStatusIfChanged, type StatusWriteOptions, withConditions } from './objects/status.ts';
export {
  CertificateReloader,
  type CertificateReloaderOptions,
  readPair,
  readTlsMaterial,
  type TlsMaterial,
} from './tls/certificate-reloader.ts';
export {
  CA_FILE,
  CERT_FILE,
  clientCertificate,
  KEY_FILE,
  type PemPair,
  type SelfSignedOptions,
  selfSignedCertificates,
  type WebhookCertificates,
  writeCertificates,
} from './tls/certificates.ts';
export {
  ADMISSION_API_VERSION,
  type AdmissionContext,
  type AdmissionOperation,
  AdmissionReason,
  type AdmissionRequest,
  type AdmissionResponse,
  type AdmissionReview,
  type AdmissionUserInfo,
  type Allow,
  admissionResponse,
  allow,
  type Deny,
  deny,
  type Mutated,
  type MutatingHandler,
  type MutationDecision,
  mutateTo,
  type Patched,
  patch,
  type ValidatingHandler,
  type ValidationDecision,
} from './webhook/admission.ts';
export {
  type CaBundleTargets,
  CUSTOM_RESOURCE_DEFINITION,
  caBundleOf,
  type InjectCaBundleOptions,
  injectCaBundle,
  MUTATING_WEBHOOK_CONFIGURATION,
  VALIDATING_WEBHOOK_CONFIGURATION,
} from './webhook/ca-bundle.ts';
export {
  CONVERSION_API_VERSION,
  type ConversionHandler,
  type ConversionRequest,
  type ConversionResponse,
  type ConversionReview,
  convertAll,
} from './webhook/conversion.ts';
export {
  escapePointerSegment,
  type JsonObject,
  type JsonValue,
  jsonEqual,
  jsonPatchDiff,
} from './webhook/json-patch.ts';
export {
  APISERVER_MAX_TIMEOUT_MS,
  type ClientCaSource,
  DEFAULT_CERT_DIR,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_WEBHOOK_PORT,
  WebhookServer,
  type WebhookServerOptions,
} from './webhook/server.ts';
