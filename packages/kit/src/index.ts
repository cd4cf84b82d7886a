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
export { METADATA_ACCEPT, type WatchEvent, type WatchOptions, watch } from './client/watch.ts';
