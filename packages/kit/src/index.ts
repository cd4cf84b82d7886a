export { Backoff, type BackoffOptions } from './base/backoff.ts';
export { type Clock, FakeClock, realClock, sleep, type TimerHandle } from './base/clock.ts';
export { sharedCounter, sharedGauge, sharedHistogram, sharedMetric } from './base/shared-metrics.ts';
export { InformerCache, type InformerOptions } from './cache/informer-cache.ts';
export {
  Reflector,
  type ReflectorHandler,
  type ReflectorHealth,
  type ReflectorOptions,
} from './cache/reflector.ts';
export { BY_NAMESPACE, BY_OWNER_UID, type IndexFunction, Store, type StoreDelta } from './cache/store.ts';
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
export { type LeaderElectionOptions, LeaderElector } from './control/leader-election.ts';
export { Manager, type ManagerExit, type ManagerOptions } from './control/manager.ts';
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
export type { DriftOptions } from './objects/drift.ts';
export { DriftReason, type DriftResult, drift, hasDrifted } from './objects/drift.ts';
export {
  type EventInput,
  type EventObject,
  EventRecorder,
  type EventRecorderOptions,
  EventType,
  microTime,
} from './objects/events.ts';
export {
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
