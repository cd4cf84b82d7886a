/**
 * HTTP to one apiserver: JSON requests and streamed watch responses.
 *
 * Configuration and authentication come from `@kubernetes/client-node`'s KubeConfig
 * (kubeconfig files, in-cluster service-account tokens, exec and auth-provider
 * plugins). The requests go through one undici Agent per transport, kept alive and
 * shared by every request and watch: a new agent per watch reconnect is what
 * exhausted file descriptors in client-node 1.x (#2893).
 */
import { KubeConfig } from '@kubernetes/client-node';
import { Agent, type buildConnector, type Dispatcher, request as undiciRequest } from 'undici';

type ConnectOptions = buildConnector.BuildOptions;

import { ApiError, classifyStatus, transientError } from './errors.ts';

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

const DEFAULT_TIMEOUT_MS = 30_000;
/** Auth headers from tokens or exec plugins are re-read this often, so rotated tokens are picked up. */
const AUTH_TTL_MS = 60_000;

export class Transport {
  readonly server: string;
  private readonly kubeConfig: KubeConfig;
  private readonly dispatcher: Dispatcher;
  /** TLS options of every connection, for the dedicated connections of watches. */
  private readonly connectOptions: ConnectOptions;
  private readonly impersonation: Impersonation | undefined;
  private authHeaders: Record<string, string> = {};
  private authAt = 0;
  private readonly dynamicAuth: boolean;

  private constructor(
    kc: KubeConfig,
    dispatcher: Dispatcher,
    connectOptions: ConnectOptions,
    server: string,
    impersonation?: Impersonation,
  ) {
    this.kubeConfig = kc;
    this.dispatcher = dispatcher;
    this.connectOptions = connectOptions;
    this.server = server.replace(/\/$/, '');
    this.impersonation = impersonation;
    const user = kc.getCurrentUser();
    this.dynamicAuth = !!user && (!!user.token || !!user.authProvider || !!user.exec || !!user.password);
  }

  /** From a loaded KubeConfig (its current context). */
  static async fromKubeConfig(kc: KubeConfig): Promise<Transport> {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster; set a current-context');
    const opts: {
      ca?: Buffer;
      cert?: Buffer;
      key?: Buffer;
      rejectUnauthorized?: boolean;
      servername?: string;
      headers?: Record<string, string>;
    } = {};
    await kc.applyToHTTPSOptions(opts as Parameters<KubeConfig['applyToHTTPSOptions']>[0]);
    const connect: ConnectOptions = {
      ca: opts.ca,
      cert: opts.cert,
      key: opts.key,
      rejectUnauthorized: opts.rejectUnauthorized ?? !cluster.skipTLSVerify,
      servername: opts.servername,
      keepAlive: true,
      keepAliveInitialDelay: 30_000,
    };
    const dispatcher = new Agent({
      connect,
      headersTimeout: DEFAULT_TIMEOUT_MS,
      connections: 64,
      pipelining: 1,
    });
    const t = new Transport(kc, dispatcher, connect, cluster.server);
    return t;
  }

  /** From a kubeconfig file, `$KUBECONFIG`, `~/.kube/config` or the in-cluster service account. */
  static async load(kubeconfigPath?: string): Promise<Transport> {
    const kc = new KubeConfig();
    if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
    else kc.loadFromDefault();
    return Transport.fromKubeConfig(kc);
  }

  /** A transport that shares this one's connections and acts as someone else. */
  impersonate(as: Impersonation): Transport {
    return new Transport(this.kubeConfig, this.dispatcher, this.connectOptions, this.server, as);
  }

  private async headers(contentType?: string, accept?: string): Promise<Record<string, string | string[]>> {
    if (this.dynamicAuth && Date.now() - this.authAt > AUTH_TTL_MS) {
      const o: { headers?: Record<string, string> } = { headers: {} };
      await this.kubeConfig.applyToHTTPSOptions(o as Parameters<KubeConfig['applyToHTTPSOptions']>[0]);
      this.authHeaders = { ...(o.headers ?? {}) };
      delete this.authHeaders['Impersonate-User'];
      this.authAt = Date.now();
    }
    const h: Record<string, string | string[]> = {
      accept: accept ?? 'application/json',
      ...this.authHeaders,
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
      const res = await this.raw(opts, agent);
      return { ...res, close: () => agent.destroy() };
    } catch (err) {
      await agent.destroy();
      throw err;
    }
  }

  /** Sends a request and returns the response unread; the caller must consume or dump the body. */
  async raw(opts: RequestOptions, dispatcher: Dispatcher = this.dispatcher): Promise<RawResponse> {
    const label = `${opts.method} ${opts.path}`;
    const body =
      opts.body === undefined
        ? undefined
        : typeof opts.body === 'string'
          ? opts.body
          : JSON.stringify(opts.body);
    const contentType = body === undefined ? undefined : (opts.contentType ?? 'application/json');
    const signals = [
      opts.signal,
      opts.timeoutMs === 0 ? undefined : AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    ];
    const signal = AbortSignal.any(signals.filter((s): s is AbortSignal => !!s));
    try {
      const res = await undiciRequest(this.url(opts.path, opts.query), {
        method: opts.method,
        headers: await this.headers(contentType, opts.accept),
        body,
        dispatcher,
        signal,
        headersTimeout: opts.headersTimeoutMs,
      });
      return { status: res.statusCode, headers: res.headers, body: res.body };
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      throw transientError(label, err);
    }
  }

  /** A JSON request; a non-2xx answer becomes a classified {@link ApiError}. */
  async request<T>(opts: RequestOptions): Promise<T> {
    const label = `${opts.method} ${opts.path}`;
    const res = await this.raw(opts);
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      throw transientError(label, err);
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

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export { ApiError };
