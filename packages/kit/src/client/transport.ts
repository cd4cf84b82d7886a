/**
 * HTTP to one apiserver: JSON requests and streamed watch responses.
 *
 * Configuration and authentication come from {@link Credentials}: a kubeconfig read by
 * `@kubernetes/client-node` (files, exec and auth-provider plugins; imported only on
 * that path), or the pod's service account read natively (see {@link loadCredentials}).
 * The requests go through one undici Agent per transport, kept alive and
 * shared by every request and watch: a new agent per watch reconnect is what
 * exhausted file descriptors in client-node 1.x (#2893).
 *
 * Client-side rate limiting and request metrics follow client-go's REST client:
 * - With `rateLimit`, one {@link TokenBucket} is shared by the transport and every
 *   impersonating copy of it (one budget per client, as one rest.Config per manager).
 *   Requests ({@link Transport.request}, {@link Transport.raw}) take a token first;
 *   watches ({@link Transport.dedicated}) take none, neither for the request that opens
 *   them nor for the stream (client-go's `Request.Watch`: "we specifically don't want
 *   to rate limit watches"). Waiting for a token counts against the request's
 *   deadline, and its abort signal ends the wait.
 * - With `registry`, client-go's metric names and labels (component-base's
 *   `restclient` metrics): `rest_client_requests_total{code,method,host}` for every
 *   request and watch (code `<error>` when no response came),
 *   `rest_client_request_duration_seconds{verb,host}` for JSON requests (the token
 *   wait included, as client-go times it), and
 *   `rest_client_rate_limiter_duration_seconds{verb,host}` for each token taken.
 *   There is no global registry: without `registry` nothing is recorded.
 *
 * {@link Transport.isolated} derives a transport for traffic that must not queue behind
 * the rest (lease renewals, the metrics endpoint's reviews): same server and
 * credentials, its own connections, its own bucket (or none), its own default deadline.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Counter, Histogram, Registry } from 'prom-client';
import { Agent, type buildConnector, type Dispatcher, request as undiciRequest } from 'undici';
import type { Clock } from '../base/clock.ts';
import { sharedCounter, sharedHistogram } from '../base/shared-metrics.ts';

type ConnectOptions = buildConnector.BuildOptions;

import type { Credentials } from './credentials.ts';
import { ApiError, classifyStatus, transientError } from './errors.ts';
import type { InClusterOptions } from './in-cluster-credentials.ts';
import { KubeconfigCredentials } from './kubeconfig-credentials.ts';
import { loadCredentials } from './load-credentials.ts';
import { type RateLimit, TokenBucket } from './token-bucket.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RequestOptions {
  readonly method: HttpMethod;
  /** Path below the server URL, e.g. `/api/v1/namespaces`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** A JSON-serialisable body, or a string sent as is. */
  readonly body?: unknown;
  readonly contentType?: string;
  /** The Accept header; JSON by default. */
  readonly accept?: string;
  readonly signal?: AbortSignal;
  /** Overall deadline; the default suits reads and writes, not watches. */
  readonly timeoutMs?: number;
  /**
   * How long to wait for the response headers. A watch's headers come at once; waiting
   * long for them means a dead pooled connection.
   */
  readonly headersTimeoutMs?: number;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: AsyncIterable<Uint8Array> & { text(): Promise<string>; dump(): Promise<void> };
}

/** Who the requests are made as, when a privileged client acts for someone else. */
export interface Impersonation {
  readonly user: string;
  readonly groups?: readonly string[];
  readonly uid?: string;
}

/** How a transport is made: limits and metrics; none of either by default. */
export interface TransportOptions {
  /**
   * Client-side rate limit shared by this transport and its impersonating copies; none
   * when omitted (tests, scripts). A manager's client should set one:
   * {@link DEFAULT_CLIENT_RATE_LIMIT} is controller-runtime's 20 qps, burst 30.
   */
  readonly rateLimit?: RateLimit;
  /** Where the `rest_client_*` metrics are registered (e.g. `manager.registry`); none when omitted. */
  readonly registry?: Registry;
  /** The rate limiter's clock; tests pass a FakeClock. */
  readonly clock?: Clock;
}

/**
 * How {@link Transport.isolated} derives a transport. Nothing is inherited from the
 * source transport's limits: what is omitted here is absent (no bucket) or the default.
 */
export interface IsolatedOptions {
  /** A token bucket of the derived transport's own; none when omitted. */
  readonly rateLimit?: RateLimit;
  /**
   * The overall deadline of each request that sets none itself (instead of 30 s), and
   * the longest wait for response headers on its pool.
   */
  readonly timeoutMs?: number;
  /** The connections its pool opens at most; {@link ISOLATED_CONNECTIONS} by default. */
  readonly connections?: number;
}

/**
 * The pool of a derived transport: small, because what needs one (a lease, a few
 * reviews at a time) sends little, and each pool costs descriptors on both ends.
 */
export const ISOLATED_CONNECTIONS = 4;

/** How {@link Transport.load} finds its credentials, besides the transport's options. */
export interface LoadOptions extends TransportOptions {
  /** Where the in-cluster path reads the service account (tests); see {@link InClusterOptions}. */
  readonly inCluster?: InClusterOptions;
}

/** client-go's buckets for both latency histograms (component-base restclient metrics). */
const LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0] as const;

/** The `rest_client_*` metrics of one registry, shared by every transport registered there. */
interface RestClientMetrics {
  readonly requests: Counter<'code' | 'method' | 'host'>;
  readonly duration: Histogram<'verb' | 'host'>;
  readonly rateLimiter: Histogram<'verb' | 'host'>;
}

function restClientMetrics(registry: Registry): RestClientMetrics {
  return {
    requests: sharedCounter(
      registry,
      'rest_client_requests_total',
      'Number of HTTP requests, partitioned by status code, method, and host.',
      ['code', 'method', 'host'],
    ),
    duration: sharedHistogram(
      registry,
      'rest_client_request_duration_seconds',
      'Request latency in seconds. Broken down by verb, and host.',
      ['verb', 'host'],
      LATENCY_BUCKETS,
    ),
    rateLimiter: sharedHistogram(
      registry,
      'rest_client_rate_limiter_duration_seconds',
      'Client side rate limiter latency in seconds. Broken down by verb, and host.',
      ['verb', 'host'],
      LATENCY_BUCKETS,
    ),
  };
}

/** What a transport shares with its impersonating copies. */
interface Shared {
  readonly limiter: TokenBucket | undefined;
  readonly metrics: RestClientMetrics | undefined;
  /** The deadline of a request that sets none. */
  readonly timeoutMs: number;
  /** The limiter's clock, for the buckets of derived transports. */
  readonly clock: Clock | undefined;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export class Transport {
  readonly server: string;
  private readonly credentials: Credentials;
  private readonly dispatcher: Dispatcher;
  /** TLS options of every connection, for the dedicated connections of watches. */
  private readonly connectOptions: ConnectOptions;
  private readonly impersonation: Impersonation | undefined;
  private readonly shared: Shared;
  /** `host:port` of the server: the `host` label of the metrics. */
  private readonly host: string;

  private constructor(
    credentials: Credentials,
    dispatcher: Dispatcher,
    connectOptions: ConnectOptions,
    shared: Shared,
    impersonation?: Impersonation,
  ) {
    this.credentials = credentials;
    this.dispatcher = dispatcher;
    this.connectOptions = connectOptions;
    this.server = credentials.server.replace(/\/$/, '');
    this.host = hostOf(this.server);
    this.shared = shared;
    this.impersonation = impersonation;
  }

  /** To the server of `credentials`, authenticated by them. */
  static fromCredentials(credentials: Credentials, options: TransportOptions = {}): Transport {
    const { ca, cert, key, rejectUnauthorized, servername } = credentials.tls;
    const connect: ConnectOptions = {
      ca,
      cert,
      key,
      rejectUnauthorized,
      servername,
      keepAlive: true,
      keepAliveInitialDelay: 30_000,
    };
    const dispatcher = new Agent({
      connect,
      headersTimeout: DEFAULT_TIMEOUT_MS,
      connections: 64,
      pipelining: 1,
    });
    const shared: Shared = {
      limiter: options.rateLimit ? new TokenBucket(options.rateLimit, options.clock) : undefined,
      metrics: options.registry ? restClientMetrics(options.registry) : undefined,
      timeoutMs: DEFAULT_TIMEOUT_MS,
      clock: options.clock,
    };
    return new Transport(credentials, dispatcher, connect, shared);
  }

  /** From a loaded KubeConfig (its current context). */
  static async fromKubeConfig(kc: KubeConfig, options: TransportOptions = {}): Promise<Transport> {
    return Transport.fromCredentials(await KubeconfigCredentials.fromKubeConfig(kc), options);
  }

  /**
   * From a kubeconfig file, `$KUBECONFIG`, `~/.kube/config` or the in-cluster service
   * account, in that order ({@link loadCredentials}).
   */
  static async load(kubeconfigPath?: string, options: LoadOptions = {}): Promise<Transport> {
    return Transport.fromCredentials(await loadCredentials(kubeconfigPath, options.inCluster), options);
  }

  /** A transport that shares this one's connections, rate limit and metrics, and acts as someone else. */
  impersonate(as: Impersonation): Transport {
    return new Transport(this.credentials, this.dispatcher, this.connectOptions, this.shared, as);
  }

  /**
   * A transport to the same server, with the same credentials and impersonation, that
   * shares nothing a request can queue on: a new undici Agent (its own connections, so
   * a pool saturated by the source's requests, or a connection frozen under them,
   * cannot hold its requests), its own token bucket or none (`options.rateLimit`; the
   * source's is never shared), and its own default deadline (`options.timeoutMs`). The
   * request metrics go to the same registry, under the same names and labels, as
   * client-go's leader-election clientset counts with the rest. Credentials are shared:
   * they are read, not queued on, and a rotated token reaches both. For a lease's
   * renewals or an endpoint's reviews, which must not wait behind reconciles, as
   * client-go gives the lease lock its own clientset. Close it with {@link close}.
   */
  isolated(options: IsolatedOptions = {}): Transport {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const dispatcher = new Agent({
      connect: this.connectOptions,
      headersTimeout: timeoutMs,
      connections: options.connections ?? ISOLATED_CONNECTIONS,
      pipelining: 1,
    });
    const shared: Shared = {
      limiter: options.rateLimit ? new TokenBucket(options.rateLimit, this.shared.clock) : undefined,
      metrics: this.shared.metrics,
      timeoutMs,
      clock: this.shared.clock,
    };
    return new Transport(this.credentials, dispatcher, this.connectOptions, shared, this.impersonation);
  }

  /** The rate limit every request of this transport waits on; undefined when unlimited. */
  get rateLimit(): RateLimit | undefined {
    const l = this.shared.limiter;
    return l ? { qps: l.qps, burst: l.burst } : undefined;
  }

  private async headers(contentType?: string, accept?: string): Promise<Record<string, string | string[]>> {
    const h: Record<string, string | string[]> = {
      accept: accept ?? 'application/json',
      ...(await this.credentials.authHeaders()),
    };
    if (contentType) h['content-type'] = contentType;
    if (this.impersonation) {
      h['impersonate-user'] = this.impersonation.user;
      if (this.impersonation.groups?.length) h['impersonate-group'] = [...this.impersonation.groups];
      if (this.impersonation.uid) h['impersonate-uid'] = this.impersonation.uid;
    }
    return h;
  }

  private url(path: string, query?: RequestOptions['query']): string {
    let u = this.server + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') q.set(k, String(v));
      const s = q.toString();
      if (s) u += `?${s}`;
    }
    return u;
  }

  /**
   * A request on a connection of its own, closed by `close()`: for watches. A watch
   * whose connection froze must take its socket down with it; on the shared pool, an
   * aborted stream can leave the socket behind, and the next requests queue on it.
   * One connection per watch, always closed, never leaks descriptors (client-node's
   * agent per reconnect did, #2893).
   */
  async dedicated(opts: RequestOptions): Promise<RawResponse & { close(): Promise<void> }> {
    const agent = new Agent({ connect: this.connectOptions, connections: 1, pipelining: 1, bodyTimeout: 0 });
    try {
      const res = await this.send(opts, agent, deadlineOf(opts, this.shared.timeoutMs), false);
      return { ...res, close: () => agent.destroy() };
    } catch (err) {
      await agent.destroy();
      throw err;
    }
  }

  /**
   * Sends a request (after taking a rate-limit token) and returns the response unread;
   * the caller must consume or dump the body.
   */
  async raw(opts: RequestOptions): Promise<RawResponse> {
    return this.send(opts, this.dispatcher, deadlineOf(opts, this.shared.timeoutMs), true);
  }

  /**
   * Waits for a token when `throttled` and the transport is rate limited, then sends.
   * `deadline` (the request's overall timeout) starts before the wait, so a request
   * queued behind the limiter still fails at its deadline.
   */
  private async send(
    opts: RequestOptions,
    dispatcher: Dispatcher,
    deadline: AbortSignal | undefined,
    throttled: boolean,
  ): Promise<RawResponse> {
    const label = `${opts.method} ${opts.path}`;
    const signal = AbortSignal.any([opts.signal, deadline].filter((s): s is AbortSignal => !!s));
    const { limiter, metrics } = this.shared;
    if (throttled && limiter) {
      const started = performance.now();
      try {
        await limiter.take(signal);
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        throw transientError(label, new Error('timed out waiting for the client-side rate limiter'));
      } finally {
        metrics?.rateLimiter.observe(
          { verb: opts.method, host: this.host },
          (performance.now() - started) / 1000,
        );
      }
    }
    const body =
      opts.body === undefined
        ? undefined
        : typeof opts.body === 'string'
          ? opts.body
          : JSON.stringify(opts.body);
    const contentType = body === undefined ? undefined : (opts.contentType ?? 'application/json');
    try {
      const res = await undiciRequest(this.url(opts.path, opts.query), {
        method: opts.method,
        headers: await this.headers(contentType, opts.accept),
        body,
        dispatcher,
        signal,
        headersTimeout: opts.headersTimeoutMs,
      });
      metrics?.requests.inc({ code: String(res.statusCode), method: opts.method, host: this.host });
      return { status: res.statusCode, headers: res.headers, body: res.body };
    } catch (err) {
      // client-go's label for a request that got no response: errors are unbounded text.
      metrics?.requests.inc({ code: '<error>', method: opts.method, host: this.host });
      if (opts.signal?.aborted) throw err;
      throw transientError(label, err);
    }
  }

  /** A JSON request; a non-2xx answer becomes a classified {@link ApiError}. */
  async request<T>(opts: RequestOptions): Promise<T> {
    const label = `${opts.method} ${opts.path}`;
    const started = performance.now();
    let text: string;
    let res: RawResponse;
    try {
      res = await this.raw(opts);
      try {
        text = await res.body.text();
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        throw transientError(label, err);
      }
    } finally {
      this.shared.metrics?.duration.observe(
        { verb: opts.method, host: this.host },
        (performance.now() - started) / 1000,
      );
    }
    const parsed = parseJson(text);
    if (res.status >= 200 && res.status < 300) return parsed as T;
    const retryAfter = res.headers['retry-after'];
    throw classifyStatus(
      res.status,
      parsed ?? text,
      label,
      Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
    );
  }

  /** Releases the connections. Requests in flight fail. */
  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}

function deadlineOf(opts: RequestOptions, defaultMs: number): AbortSignal | undefined {
  return opts.timeoutMs === 0 ? undefined : AbortSignal.timeout(opts.timeoutMs ?? defaultMs);
}

/** `host:port` of a server URL, as client-go's `url.Host`. */
function hostOf(server: string): string {
  try {
    return new URL(server).host;
  } catch {
    return server;
  }
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export { ApiError };
