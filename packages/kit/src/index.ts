export { Backoff, type BackoffOptions } from './backoff.ts';
export {
  type ApplyOptions,
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
  type HttpMethod,
  type Impersonation,
  type RawResponse,
  type RequestOptions,
  Transport,
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
export { type Clock, FakeClock, realClock, sleep, type TimerHandle } from './clock.ts';
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
} from './conditions.ts';
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
} from './controller.ts';
export {
  type CrdDefinition,
  type CrdVersion,
  crdYaml,
  customResourceDefinition,
  type JSONSchemaProps,
  type PrinterColumn,
  type ValidationRule,
} from './crd.ts';
export type { DriftOptions } from './drift.ts';
export { DriftReason, type DriftResult, drift, hasDrifted } from './drift.ts';
export {
  type EventInput,
  type EventObject,
  EventRecorder,
  type EventRecorderOptions,
  EventType,
  microTime,
} from './events.ts';
export {
  addFinalizer,
  type FinalizerOutcome,
  type FinalizerStep,
  finalizer,
  finalizerLifecycle,
  removeFinalizer,
  validateFinalizerName,
} from './finalizers.ts';
export { InformerCache, type InformerOptions } from './informer-cache.ts';
export { type LeaderElectionOptions, LeaderElector } from './leader-election.ts';
export { Manager, type ManagerExit, type ManagerOptions } from './manager.ts';
export type { ControllerClaim } from './owner-references.ts';
export {
  claimController,
  controllerOf,
  controllerReference,
  isControlledBy,
  isOwnedBy,
  ownerReference,
} from './owner-references.ts';
export {
  Reflector,
  type ReflectorHandler,
  type ReflectorHealth,
  type ReflectorOptions,
} from './reflector.ts';
export { sharedCounter, sharedGauge, sharedHistogram, sharedMetric } from './shared-metrics.ts';
export { BY_NAMESPACE, BY_OWNER_UID, type IndexFunction, Store, type StoreDelta } from './store.ts';
export type { RunWorkersOptions } from './workqueue.ts';
export { runWorkers, Workqueue, type WorkqueueOptions } from './workqueue.ts';
