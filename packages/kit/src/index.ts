export {
  type ApplyOptions,
  type DeleteOptions,
  type FieldValidation,
  gvkOf,
  type JsonPatchOp,
  KubeClient,
  type ListOptions,
  type Patch,
  withGvk,
  type WriteOptions,
} from './client/client.ts';
export { Discovery, resourcePath } from './client/discovery.ts';
export { ApiError, ApiErrorReason, type ApiStatus, classifyStatus, isApiError, type StatusCause } from './client/errors.ts';
export { type HttpMethod, type Impersonation, type RawResponse, type RequestOptions, Transport } from './client/transport.ts';
export {
  type GroupVersionKind,
  type KubeList,
  type KubeObject,
  type ListMeta,
  type ManagedFieldsEntry,
  type ObjectKey,
  type ObjectMeta,
  objectKey,
  type OwnerReference,
  parseApiVersion,
  type ResourceInfo,
  splitKey,
} from './client/types.ts';
export { METADATA_ACCEPT, watch, type WatchEvent, type WatchOptions } from './client/watch.ts';
