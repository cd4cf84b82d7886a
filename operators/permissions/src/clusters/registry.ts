/**
 * Clients for the client clusters: one per Cluster API `Cluster`, built from its
 * `<name>-kubeconfig` Secret (key `value`, the Cluster API convention) read through the
 * management cluster's client.
 *
 * - A client is cached per cluster and reused while the Secret's resourceVersion (or,
 *   when only metadata changed, its kubeconfig text) stays the same; a rotated Secret
 *   yields a new client, and the old one's connections are closed once the calls that
 *   may still use it have had their deadline.
 * - With `secretMaxAgeMs`, a Secret read that recent is trusted without another GET: a
 *   reconcile touching a cluster once per (Permission, plugin) would otherwise cost one
 *   Secret GET on the management cluster per touch (4,000 for 1,000 UserRoles of two
 *   Permissions over two clusters). A call that fails for want of an answer or is refused
 *   (401/403: the credentials may have been rotated and revoked) drops that trust, so the
 *   next access reads the Secret again.
 * - A missing Secret or an unusable kubeconfig is an answer (`unavailable` with a
 *   reason), never a throw: the caller reports that cluster and goes on with the others.
 * - Every call into a client cluster is bounded by a deadline (10 s by default), so one
 *   unreachable cluster never holds up a reconcile that also serves others. The deadline
 *   is per call, not per client: `ClientCluster.call(fn)` binds a fresh deadline signal
 *   to the client it hands `fn`, races `fn` against it (discovery requests do not take
 *   the signal), and turns a timeout or a failed connection into a
 *   {@link ClusterUnreachableError}. `withDeadline()` and the `client` getter give a
 *   bound client for code that cannot be wrapped; each starts its own deadline.
 */
import { createHash } from 'node:crypto';
import {
  ApiError,
  ApiErrorReason,
  isApiError,
  KubeClient,
  type KubeObject,
  type TransportOptions,
} from '@operators/kit';
import { parseClusterId } from '../domain/cluster-selection.ts';
import { Reason } from '../domain/reasons.ts';
import { checkKubeconfig } from './kubeconfig.ts';
import { ClusterUnreachableError } from './unreachable.ts';

export { ClusterUnreachableError, isClusterUnreachable } from './unreachable.ts';

/** How long one call into a client cluster may take, unless the registry is told otherwise. */
export const DEFAULT_CLUSTER_DEADLINE_MS = 10_000;

/** The Secret key holding the kubeconfig (Cluster API's `<cluster>-kubeconfig` Secrets). */
export const KUBECONFIG_KEY = 'value';

/** The name of a cluster's kubeconfig Secret, in the Cluster's namespace. */
export function kubeconfigSecretName(clusterName: string): string {
  return `${clusterName}-kubeconfig`;
}

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;

export type Secret = KubeObject & { readonly data?: Readonly<Record<string, string>> };

/** One client cluster, reachable through its kubeconfig. */
export interface ClientCluster {
  /** `<namespace>/<name>` of the Cluster object. */
  readonly id: string;
  /**
   * A client bound to a deadline that starts when this property is read: read it for
   * each call (`cluster.client.get(...)`), never keep it. Prefer {@link call}.
   */
  readonly client: KubeClient;
  /**
   * Runs `fn` with a client bound to a fresh deadline (the registry's `deadlineMs`).
   * Resolves with what `fn` resolves with; rejects with a {@link ClusterUnreachableError}
   * when the deadline passes or the cluster cannot be connected to, and with `fn`'s own
   * error otherwise (an ApiError from the cluster's apiserver, say).
   */
  call<T>(fn: (client: KubeClient) => Promise<T>): Promise<T>;
  /** A client bound to a deadline of `ms` (default the registry's) starting now. */
  withDeadline(ms?: number): KubeClient;
}

/** Why a client cluster cannot be used now; `reason` is one of {@link Reason}. */
export interface ClusterUnavailable {
  readonly kind: 'unavailable';
  readonly id: string;
  readonly reason: string;
  readonly message: string;
}

export type ClusterAccess = { readonly kind: 'ok'; readonly cluster: ClientCluster } | ClusterUnavailable;

export type ClusterProbe =
  | { readonly kind: 'reachable'; readonly id: string; readonly version: string }
  | ClusterUnavailable;

export interface ClusterRegistryOptions {
  /** The management cluster's client: kubeconfig Secrets are read through it. */
  readonly client: KubeClient;
  /** The deadline of each call into a client cluster; default {@link DEFAULT_CLUSTER_DEADLINE_MS}. */
  readonly deadlineMs?: number;
  /**
   * How long a replaced client's connections stay open for the calls that may still be
   * using it; default `deadlineMs` (every call made through `call()` has ended by then).
   */
  readonly retireAfterMs?: number;
  /** Transport options of the client-cluster clients (rate limit, metrics registry). */
  readonly transport?: TransportOptions;
  /**
   * Reads a kubeconfig Secret; `undefined` when it does not exist. Default: a GET through
   * `client` under the deadline. An operator with a Secret informer may answer from it.
   */
  readonly readSecret?: (namespace: string, name: string, signal: AbortSignal) => Promise<Secret | undefined>;
  /**
   * How long a Secret read is trusted before the next access reads it again; default 0
   * (every access reads it, so a rotation is seen at once).
   */
  readonly secretMaxAgeMs?: number;
  readonly log?: (message: string) => void;
}

interface Entry {
  resourceVersion: string;
  /** When (performance.now()) the Secret last confirmed this client; 0 forces a read. */
  checkedAt: number;
  readonly fingerprint: string;
  readonly client: KubeClient;
  readonly cluster: ClientCluster;
}

export class ClusterRegistry {
  private readonly management: KubeClient;
  readonly deadlineMs: number;
  private readonly retireAfterMs: number;
  private readonly transportOptions: TransportOptions;
  private readonly readSecret: NonNullable<ClusterRegistryOptions['readSecret']>;
  private readonly secretMaxAgeMs: number;
  private readonly log: (message: string) => void;
  private readonly entries = new Map<string, Entry>();
  /** One Secret read per cluster at a time: concurrent reconciles share it. */
  private readonly inflight = new Map<string, Promise<ClusterAccess>>();
  private readonly retiring = new Set<{ timer: NodeJS.Timeout; client: KubeClient }>();
  /** Aborts every call in flight when the registry is closed. */
  private readonly closing = new AbortController();

  constructor(opts: ClusterRegistryOptions) {
    this.management = opts.client;
    this.deadlineMs = opts.deadlineMs ?? DEFAULT_CLUSTER_DEADLINE_MS;
    this.retireAfterMs = opts.retireAfterMs ?? this.deadlineMs;
    this.transportOptions = opts.transport ?? {};
    this.readSecret =
      opts.readSecret ??
      ((namespace, name, signal) => this.management.find<Secret>(SECRET, name, namespace, { signal }));
    this.secretMaxAgeMs = opts.secretMaxAgeMs ?? 0;
    this.log = opts.log ?? (() => undefined);
  }

  /**
   * A client for cluster `id` (`<namespace>/<name>`), or why there is none. Reads the
   * kubeconfig Secret on every call (so a rotation is seen at once) unless it was read
   * within `secretMaxAgeMs`, and builds a new client only when it changed. Never throws.
   */
  access(id: string): Promise<ClusterAccess> {
    if (this.closing.signal.aborted) {
      return Promise.resolve(unavailable(id, Reason.ClusterUnreachable, 'the cluster registry is closed'));
    }
    const known = this.entries.get(id);
    if (known && known.checkedAt > 0 && performance.now() - known.checkedAt < this.secretMaxAgeMs) {
      return Promise.resolve({ kind: 'ok', cluster: known.cluster });
    }
    const running = this.inflight.get(id);
    if (running) return running;
    const p = this.load(id).finally(() => this.inflight.delete(id));
    this.inflight.set(id, p);
    return p;
  }

  /**
   * Whether cluster `id` answers `GET /version` within the deadline. Says nothing about
   * what the kubeconfig's user may do there.
   */
  async reachable(id: string): Promise<ClusterProbe> {
    const access = await this.access(id);
    if (access.kind !== 'ok') return access;
    try {
      const info = await access.cluster.call((c) =>
        c.transport.request<{ gitVersion?: string }>({ method: 'GET', path: '/version', signal: c.signal }),
      );
      return { kind: 'reachable', id, version: info?.gitVersion ?? '' };
    } catch (err) {
      if (err instanceof ClusterUnreachableError) return unavailable(id, err.reason, err.message);
      if (isApiError(err, ApiErrorReason.Unauthorized) || isApiError(err, ApiErrorReason.Forbidden)) {
        return unavailable(id, Reason.ClusterAccessDenied, messageOf(err));
      }
      return unavailable(id, Reason.ClusterUnreachable, messageOf(err));
    }
  }

  /** Drops the client of cluster `id` (its Cluster was deleted); its connections close. */
  forget(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    this.retire(id, entry.client);
  }

  /** Aborts every call in flight and closes every client. The registry answers `unavailable` afterwards. */
  async close(): Promise<void> {
    this.closing.abort(new Error('the cluster registry is closed'));
    const clients = [...this.entries.values()].map((e) => e.client);
    this.entries.clear();
    for (const r of this.retiring) {
      clearTimeout(r.timer);
      clients.push(r.client);
    }
    this.retiring.clear();
    await Promise.all(clients.map((c) => closeQuietly(c)));
  }

  private async load(id: string): Promise<ClusterAccess> {
    const ref = parseClusterId(id);
    if (!ref)
      return unavailable(id, Reason.ClusterNotFound, `"${id}" is not a cluster id (<namespace>/<name>)`);
    const secretName = kubeconfigSecretName(ref.name);
    const where = `Secret ${ref.namespace}/${secretName}`;

    let secret: Secret | undefined;
    try {
      const signal = AbortSignal.any([AbortSignal.timeout(this.deadlineMs), this.closing.signal]);
      secret = await this.readSecret(ref.namespace, secretName, signal);
    } catch (err) {
      // The management cluster did not answer: keep any client we have, it may be fine.
      return unavailable(
        id,
        Reason.KubeconfigSecretMissing,
        `the ${where} could not be read: ${messageOf(err)}`,
      );
    }
    if (!secret) {
      this.forget(id);
      return unavailable(id, Reason.KubeconfigSecretMissing, `the ${where} does not exist`);
    }

    const current = this.entries.get(id);
    const rv = secret.metadata.resourceVersion ?? '';
    if (current && rv !== '' && current.resourceVersion === rv) return confirmed(current);

    const encoded = secret.data?.[KUBECONFIG_KEY];
    if (encoded === undefined || encoded === '') {
      this.forget(id);
      return unavailable(id, Reason.KubeconfigSecretMissing, `the ${where} has no key "${KUBECONFIG_KEY}"`);
    }
    const text = Buffer.from(encoded, 'base64').toString('utf8');
    const fingerprint = createHash('sha256').update(text).digest('hex');
    if (current && current.fingerprint === fingerprint) {
      // Rewritten (labels, annotations) with the same kubeconfig: the client stays.
      current.resourceVersion = rv;
      return confirmed(current);
    }

    const verdict = checkKubeconfig(text);
    if (!verdict.ok) {
      this.forget(id);
      return unavailable(
        id,
        Reason.KubeconfigInvalid,
        `the kubeconfig in ${where} is refused: ${verdict.problem}`,
      );
    }
    let client: KubeClient;
    try {
      client = await KubeClient.fromKubeconfigString(text, this.transportOptions);
    } catch (err) {
      this.forget(id);
      return unavailable(
        id,
        Reason.KubeconfigInvalid,
        `the kubeconfig in ${where} cannot be used: ${messageOf(err)}`,
      );
    }
    if (this.closing.signal.aborted) {
      await closeQuietly(client);
      return unavailable(id, Reason.ClusterUnreachable, 'the cluster registry is closed');
    }
    const entry: Entry = {
      resourceVersion: rv,
      checkedAt: performance.now(),
      fingerprint,
      client,
      cluster: this.bind(id, client),
    };
    const replaced = this.entries.get(id);
    this.entries.set(id, entry);
    if (replaced) {
      this.log(`cluster ${id}: the kubeconfig in ${where} changed; using a new client`);
      this.retire(id, replaced.client);
    }
    return { kind: 'ok', cluster: entry.cluster };
  }

  /** Closes a replaced client once the calls that may hold it have had their deadline. */
  private retire(id: string, client: KubeClient): void {
    const r = {
      client,
      timer: setTimeout(() => {
        this.retiring.delete(r);
        void closeQuietly(client).then(() => this.log(`cluster ${id}: closed the replaced client`));
      }, this.retireAfterMs),
    };
    r.timer.unref();
    this.retiring.add(r);
  }

  private bind(id: string, client: KubeClient): ClientCluster {
    const withDeadline = (ms: number = this.deadlineMs): KubeClient =>
      client.withSignal(AbortSignal.any([AbortSignal.timeout(ms), this.closing.signal]));
    return {
      id,
      get client() {
        return withDeadline();
      },
      withDeadline,
      call: (fn) => this.callWithDeadline(id, client, fn),
    };
  }

  private async callWithDeadline<T>(
    id: string,
    client: KubeClient,
    fn: (c: KubeClient) => Promise<T>,
  ): Promise<T> {
    const ms = this.deadlineMs;
    const deadline = AbortSignal.timeout(ms);
    const signal = AbortSignal.any([deadline, this.closing.signal]);
    const done = new AbortController();
    // Some requests (discovery) do not take the signal: the race ends the call anyway.
    const expired = new Promise<never>((_, reject) => {
      const fire = () => reject(signal.reason);
      if (signal.aborted) fire();
      else signal.addEventListener('abort', fire, { once: true, signal: done.signal });
    });
    try {
      return await Promise.race([fn(client.withSignal(signal)), expired]);
    } catch (err) {
      const out = unreachableOr(id, err, deadline, this.closing.signal, ms);
      if (
        out instanceof ClusterUnreachableError ||
        isApiError(out, ApiErrorReason.Unauthorized) ||
        isApiError(out, ApiErrorReason.Forbidden)
      ) {
        // Perhaps rotated credentials or a moved endpoint: the next access reads the Secret again.
        const entry = this.entries.get(id);
        if (entry?.client === client) entry.checkedAt = 0;
      }
      throw out;
    } finally {
      done.abort();
    }
  }
}

/**
 * A ClusterUnreachableError when the call failed for want of an answer (the deadline, the
 * registry closing, a connection that failed); the error itself otherwise.
 */
function unreachableOr(
  id: string,
  err: unknown,
  deadline: AbortSignal,
  closing: AbortSignal,
  ms: number,
): unknown {
  if (err instanceof ClusterUnreachableError) return err;
  // An answer from the cluster's apiserver (code > 0) is the cluster speaking, whatever the clock says.
  const answered = err instanceof ApiError && err.code > 0;
  if (!answered && deadline.aborted)
    return new ClusterUnreachableError(id, `no answer within ${ms} ms`, { cause: err });
  if (!answered && closing.aborted)
    return new ClusterUnreachableError(id, 'the cluster registry was closed', { cause: err });
  if (isApiError(err, ApiErrorReason.Transient) && err.code === 0) {
    return new ClusterUnreachableError(id, `cannot connect: ${err.message}`, { cause: err });
  }
  return err;
}

/** The Secret was just read and still holds this entry's kubeconfig: trusted for a while. */
function confirmed(entry: Entry): ClusterAccess {
  entry.checkedAt = performance.now();
  return { kind: 'ok', cluster: entry.cluster };
}

function unavailable(id: string, reason: string, message: string): ClusterUnavailable {
  return { kind: 'unavailable', id, reason, message };
}

async function closeQuietly(client: KubeClient): Promise<void> {
  await client.transport.close().catch(() => undefined);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
