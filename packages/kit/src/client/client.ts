/**
 * The client controllers use: get, list, create, delete, server-side apply, patches
 * and the status subresource, on any kind, typed by the caller. Kinds are resolved
 * through {@link Discovery}, so the same code serves built-in kinds, CRDs and kinds
 * only known at run time (weebo-link's rules).
 *
 * Every error is an {@link ApiError} with a reason; nothing here retries: retrying is
 * the workqueue's job, with backoff, so that a failing object never blocks others.
 *
 * Cancellation: every method takes an optional `signal`; an aborted signal aborts the
 * request on the wire (the connection is torn down, so a write still in flight is not
 * sent on) and the call rejects with the signal's reason. {@link KubeClient.withSignal}
 * binds a signal to every call of a client: a reconcile's `ctx.client` is bound to the
 * reconcile's signal, so a reconcile cut short by a lost lease or a shutdown deadline
 * cannot land a write afterwards.
 */
import { Discovery, resourcePath } from './discovery.ts';
import { ApiError, ApiErrorReason, isApiError } from './errors.ts';
import { KubeconfigCredentials } from './kubeconfig-credentials.ts';
import {
  type Impersonation,
  type IsolatedOptions,
  type LoadOptions,
  Transport,
  type TransportOptions,
} from './transport.ts';
import type { GroupVersionKind, KubeList, KubeObject, ResourceInfo } from './types.ts';

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the request: the call rejects with the signal's reason and nothing more is sent. */
  readonly signal?: AbortSignal;
}

export interface ListOptions extends CallOptions {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly limit?: number;
  readonly continue?: string;
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: 'NotOlderThan' | 'Exact';
}

/**
 * What the apiserver does with fields the schema does not know. The kit defaults to
 * `Strict`, as kubectl does: an operator that misspells a field of someone else's CRD
 * gets an Invalid error naming the field, instead of the field silently pruned.
 */
export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

export interface WriteOptions extends CallOptions {
  readonly fieldManager?: string;
  readonly dryRun?: boolean;
  readonly fieldValidation?: FieldValidation;
}

export interface ApplyOptions extends WriteOptions {
  /** The field manager: whoever owns the fields this apply sets. Required, never defaulted. */
  readonly fieldManager: string;
  /** Take fields owned by other managers instead of failing with a Conflict. */
  readonly force?: boolean;
}

function writeQuery(opts: WriteOptions): Record<string, string | undefined> {
  return {
    fieldManager: opts.fieldManager,
    dryRun: opts.dryRun ? 'All' : undefined,
    fieldValidation: opts.fieldValidation ?? 'Strict',
  };
}

export interface DeleteOptions extends CallOptions {
  readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  /** Delete only if the object still has this UID (protects against deleting a recreated object). */
  readonly uid?: string;
  readonly resourceVersion?: string;
}

export interface DeleteCollectionOptions extends CallOptions {
  /** Required for a namespaced kind: a collection delete never spans namespaces by accident. */
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
}

/** One JSON-patch operation (RFC 6902). `test` guards a patch against concurrent writers. */
export type JsonPatchOp =
  | { readonly op: 'add' | 'replace' | 'test'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string };

export type Patch =
  | { readonly type: 'merge'; readonly body: unknown }
  | { readonly type: 'json'; readonly body: readonly JsonPatchOp[] }
  | { readonly type: 'strategic'; readonly body: unknown };

const PATCH_CONTENT_TYPE = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
} as const;

export class KubeClient {
  readonly transport: Transport;
  readonly discovery: Discovery;
  /** Bound by {@link withSignal}: aborts every call of this client. */
  readonly signal: AbortSignal | undefined;

  constructor(transport: Transport, discovery?: Discovery, signal?: AbortSignal) {
    this.transport = transport;
    this.discovery = discovery ?? new Discovery(transport);
    this.signal = signal;
  }

  /**
   * A client whose every call is aborted by `signal` (besides any signal passed to the
   * call itself, and the one this client is already bound to). Shares connections and
   * discovery: cheap enough to make one per reconcile.
   */
  withSignal(signal: AbortSignal): KubeClient {
    return new KubeClient(
      this.transport,
      this.discovery,
      this.signal ? AbortSignal.any([this.signal, signal]) : signal,
    );
  }

  /**
   * From a kubeconfig path, `$KUBECONFIG`, `~/.kube/config`, or the pod's service account.
   * `options` sets the client-side rate limit and the registry of request metrics (see
   * {@link TransportOptions}; a manager's client: `{ rateLimit: DEFAULT_CLIENT_RATE_LIMIT }`).
   * In a pod the service account is read natively, without `@kubernetes/client-node`.
   */
  static async load(kubeconfigPath?: string, options?: LoadOptions): Promise<KubeClient> {
    return new KubeClient(await Transport.load(kubeconfigPath, options));
  }

  /** From the text of a kubeconfig (its current context); `options` as for {@link load}. */
  static async fromKubeconfigString(text: string, options?: TransportOptions): Promise<KubeClient> {
    return new KubeClient(Transport.fromCredentials(await KubeconfigCredentials.fromString(text), options));
  }

  /** A client acting as another user (with groups); shares connections and discovery. */
  impersonate(as: Impersonation): KubeClient {
    return new KubeClient(this.transport.impersonate(as), this.discovery, this.signal);
  }

  /**
   * A client to the same server, with the same credentials (and impersonation, and
   * bound signal), on a transport that shares nothing a request can queue on: its own
   * connections, its own token bucket or none, its own default deadline (see
   * {@link Transport.isolated}), and its own discovery (resolved through those
   * connections too). For traffic that must never wait behind this client's: the
   * manager gives one to its leader elector and one to its metrics authorizer. Close it
   * with `client.transport.close()` when done.
   */
  isolated(options: IsolatedOptions = {}): KubeClient {
    return new KubeClient(this.transport.isolated(options), undefined, this.signal);
  }

  /** This client's bound signal and the call's, as one; throws at once if either has aborted. */
  private combine(call: AbortSignal | undefined): AbortSignal | undefined {
    const signal = call && this.signal ? AbortSignal.any([this.signal, call]) : (call ?? this.signal);
    signal?.throwIfAborted();
    return signal;
  }

  resolve(gvk: GroupVersionKind): Promise<ResourceInfo> {
    return this.discovery.resolve(gvk);
  }

  private async target(
    gvk: GroupVersionKind,
    namespace: string | undefined,
    name?: string,
    sub?: string,
  ): Promise<{ info: ResourceInfo; path: string }> {
    const info = await this.resolve(gvk);
    if (info.namespaced && name !== undefined && !namespace) {
      throw new ApiError(
        ApiErrorReason.BadRequest,
        400,
        `${gvk.kind} is namespaced: a namespace is required to address ${name}`,
        `${gvk.apiVersion}/${gvk.kind}`,
      );
    }
    return { info, path: resourcePath(info, info.namespaced ? namespace : undefined, name, sub) };
  }

  async get<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
    opts: CallOptions = {},
  ): Promise<T> {
    const signal = this.combine(opts.signal);
    const { path } = await this.target(gvk, namespace, name);
    return this.transport.request<T>({ method: 'GET', path, signal });
  }

  /** Like {@link get}, but `undefined` when the object does not exist. */
  async find<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
    opts: CallOptions = {},
  ): Promise<T | undefined> {
    try {
      return await this.get<T>(gvk, name, namespace, opts);
    } catch (err) {
      if (isApiError(err, ApiErrorReason.NotFound)) return undefined;
      throw err;
    }
  }

  /** One page of a list; see {@link listAll} for every page. */
  async list<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    opts: ListOptions = {},
  ): Promise<KubeList<T>> {
    const signal = this.combine(opts.signal);
    const { path } = await this.target(gvk, opts.namespace);
    return this.transport.request<KubeList<T>>({
      method: 'GET',
      path,
      signal,
      query: {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: opts.limit,
        continue: opts.continue,
        resourceVersion: opts.resourceVersion,
        resourceVersionMatch: opts.resourceVersionMatch,
      },
    });
  }

  /** Every page of a list, 500 objects at a time; returns the items and the list's resourceVersion. */
  async listAll<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    opts: Omit<ListOptions, 'continue' | 'limit'> = {},
  ): Promise<{ items: T[]; resourceVersion: string }> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.list<T>(gvk, { ...opts, limit: 500, continue: cont });
      for (const i of page.items) items.push(withGvk(i, gvk));
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion ?? rv;
    } while (cont);
    return { items, resourceVersion: rv };
  }

  async create<T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<T & KubeObject> {
    const gvk = gvkOf(obj);
    const signal = this.combine(opts.signal);
    const { path } = await this.target(gvk, obj.metadata.namespace);
    return this.transport.request<T>({ method: 'POST', path, query: writeQuery(opts), body: obj, signal });
  }

  /** Replaces an object (PUT); fails with Conflict if its resourceVersion is stale. */
  async replace<T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<T & KubeObject> {
    const gvk = gvkOf(obj);
    const signal = this.combine(opts.signal);
    const { path } = await this.target(gvk, obj.metadata.namespace, obj.metadata.name);
    return this.transport.request<T>({ method: 'PUT', path, query: writeQuery(opts), body: obj, signal });
  }

  /**
   * Deletes an object. Resolves `false` when it was already gone, so that cleanup is
   * idempotent. With `uid`, deletes only that incarnation of the name.
   */
  async delete(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
    opts: DeleteOptions = {},
  ): Promise<boolean> {
    const signal = this.combine(opts.signal);
    const { path } = await this.target(gvk, namespace, name);
    const preconditions =
      opts.uid || opts.resourceVersion ? { uid: opts.uid, resourceVersion: opts.resourceVersion } : undefined;
    try {
      await this.transport.request({
        method: 'DELETE',
        path,
        signal,
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          propagationPolicy: opts.propagationPolicy,
          preconditions,
        },
      });
      return true;
    } catch (err) {
      if (isApiError(err, ApiErrorReason.NotFound)) return false;
      throw err;
    }
  }

  /**
   * Deletes every object of a kind that the selectors match, in one request
   * (`deletecollection`): the apiserver picks them from its own state, not from a cache
   * that may lag, and answers with the objects it deleted, which this returns. A call
   * without any selector is refused here, before any request: deleting a whole kind is
   * never what a cleanup means.
   */
  async deleteCollection<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    opts: DeleteCollectionOptions,
  ): Promise<KubeList<T>> {
    if (!opts.labelSelector && !opts.fieldSelector) {
      throw new ApiError(
        ApiErrorReason.BadRequest,
        400,
        `deleteCollection of ${gvk.kind} needs a label or field selector`,
        `${gvk.apiVersion}/${gvk.kind}`,
      );
    }
    const signal = this.combine(opts.signal);
    const info = await this.resolve(gvk);
    if (info.namespaced && !opts.namespace) {
      throw new ApiError(
        ApiErrorReason.BadRequest,
        400,
        `${gvk.kind} is namespaced: deleteCollection needs a namespace`,
        `${gvk.apiVersion}/${gvk.kind}`,
      );
    }
    return this.transport.request<KubeList<T>>({
      method: 'DELETE',
      path: resourcePath(info, info.namespaced ? opts.namespace : undefined),
      signal,
      query: { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector },
      ...(opts.propagationPolicy
        ? { body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: opts.propagationPolicy } }
        : {}),
    });
  }

  /**
   * Server-side apply: the object states the fields `fieldManager` wants to own, with
   * their values; fields it omits that it owned before are removed; fields owned by
   * others are left alone (or taken, with `force`).
   */
  async apply<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T & KubeObject> {
    return this.applyTo(obj, opts);
  }

  /** Server-side apply on the status subresource. */
  async applyStatus<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T & KubeObject> {
    return this.applyTo(obj, opts, 'status');
  }

  private async applyTo<T extends KubeObject>(obj: T, opts: ApplyOptions, sub?: string): Promise<T> {
    const gvk = gvkOf(obj);
    const name = obj.metadata.name;
    if (!name) throw new Error(`server-side apply needs metadata.name (${gvk.kind})`);
    const signal = this.combine(opts.signal);
    const { path } = await this.target(gvk, obj.metadata.namespace, name, sub);
    return this.transport.request<T>({
      method: 'PATCH',
      path,
      signal,
      query: { ...writeQuery(opts), force: opts.force ? 'true' : undefined },
      body: obj,
      contentType: 'application/apply-patch+yaml',
    });
  }

  async patch<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace: string | undefined,
    patch: Patch,
    opts: WriteOptions & { subresource?: string } = {},
  ): Promise<T> {
    const signal = this.combine(opts.signal);
    const { path } = await this.target(gvk, namespace, name, opts.subresource);
    return this.transport.request<T>({
      method: 'PATCH',
      path,
      signal,
      query: writeQuery(opts),
      body: patch.body,
      contentType: PATCH_CONTENT_TYPE[patch.type],
    });
  }

  /** A patch of the status subresource (merge or JSON patch). */
  patchStatus<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace: string | undefined,
    patch: Patch,
    opts: WriteOptions = {},
  ): Promise<T> {
    return this.patch<T>(gvk, name, namespace, patch, { ...opts, subresource: 'status' });
  }
}

export function gvkOf(obj: KubeObject): GroupVersionKind {
  if (!obj.apiVersion || !obj.kind) {
    throw new Error(
      `object ${obj.metadata.namespace ?? ''}/${obj.metadata.name ?? ''} has no apiVersion or kind`,
    );
  }
  return { apiVersion: obj.apiVersion, kind: obj.kind };
}

/**
 * List items come without apiVersion and kind; put them back so items stand alone.
 * Mutates: list items are freshly parsed and owned by the caller, and a copy per
 * object would double the cost of a large list.
 */
export function withGvk<T extends KubeObject>(obj: T, gvk: GroupVersionKind): T {
  if (obj.apiVersion && obj.kind) return obj;
  const o = obj as { apiVersion?: string; kind?: string };
  o.apiVersion = gvk.apiVersion;
  o.kind = gvk.kind;
  return obj;
}
