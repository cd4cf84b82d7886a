/**
 * `/bundle`: the model as an OPA bundle over plain HTTP, for OPA's bundle downloader
 * to poll. A kit Runnable that runs on every replica (OPA may poll any pod behind the
 * Service, leader or not), each serving its own model.
 *
 * - `GET`/`HEAD /bundle` (and `/bundle.tar.gz`): 503 with `Retry-After` until the model
 *   is rebuilt from the API (a half-built model would revoke grants in OPA's eyes);
 *   then 200 with the tar.gz, `ETag: "<revision>"`.
 * - `If-None-Match` naming the current revision: 304 with no body. OPA sends back the
 *   ETag it last received, so polling an unchanged model costs a hash comparison.
 * - `/healthz`: 200. Anything else: 404; other methods: 405.
 *
 * The tar.gz is built once per revision, on the first request that needs it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Runnable } from '@operators/kit';
import { buildBundle } from './bundle.ts';
import { BUNDLE_ROOT, type StorageEngine } from './storage-engine.ts';

/** The bundle's default port (§1, §6: "typically 8082"). */
export const DEFAULT_BUNDLE_SERVER_PORT = 8082;
/** Paths the bundle is served at: OPA's `resource` is configurable, both names are usual. */
export const BUNDLE_PATHS: readonly string[] = ['/bundle', '/bundle.tar.gz'];

export interface BundleServerOptions {
  readonly engine: StorageEngine;
  /** Default `0.0.0.0`: OPA reaches the pod through a Service. */
  readonly host?: string;
  /** Default {@link DEFAULT_BUNDLE_SERVER_PORT}; 0 picks a free port (tests). */
  readonly port?: number;
  /**
   * When `port` is taken, listen on a free one instead of failing (`npm run up` on a laptop,
   * where 8082 may be anyone's; read the port back with `address()`). Never in a pod: there
   * the Service names the port, and a taken one is an error to see.
   */
  readonly freePortIfTaken?: boolean;
  /** What a 503 asks the client to wait, in seconds. Default 1. */
  readonly retryAfterSeconds?: number;
}

export class BundleServer implements Runnable {
  readonly name = 'bundle-server';
  private readonly opts: BundleServerOptions;
  private server: Server | undefined;
  private stopping: Promise<void> | undefined;
  /** The tar.gz of one revision: rebuilt when the revision moves on. */
  private cached: { readonly revision: string; readonly etag: string; readonly body: Buffer } | undefined;

  constructor(opts: BundleServerOptions) {
    this.opts = opts;
  }

  async start(signal?: AbortSignal): Promise<void> {
    if (this.server) throw new Error(`${this.name} is already started`);
    const server = createServer((req, res) => this.serve(req, res));
    this.server = server;
    this.stopping = undefined;
    const listen = (port: number): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, this.opts.host ?? '0.0.0.0', () => {
          server.off('error', reject);
          resolve();
        });
      });
    await listen(this.opts.port ?? DEFAULT_BUNDLE_SERVER_PORT)
      .catch((err: unknown) => {
        if (this.opts.freePortIfTaken && (err as { code?: string }).code === 'EADDRINUSE') return listen(0);
        throw err;
      })
      .catch((err: unknown) => {
        this.server = undefined;
        throw err;
      });
    if (signal?.aborted) await this.stop();
    else signal?.addEventListener('abort', () => void this.stop(), { once: true });
  }

  /** Closes the listener and every connection (OPA keeps one alive between polls). Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const server = this.server;
      if (!server) return;
      this.server = undefined;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    })();
    return this.stopping;
  }

  /** Where it listens, once started (the chosen port when `port` was 0). */
  address(): { readonly host: string; readonly port: number } | undefined {
    const a = this.server?.address() as AddressInfo | string | null | undefined;
    return a && typeof a === 'object' ? { host: a.address, port: a.port } : undefined;
  }

  /** The current bundle: its ETag (quoted revision) and bytes, built once per revision. */
  current(): { readonly revision: string; readonly etag: string; readonly body: Buffer } {
    const engine = this.opts.engine;
    const revision = engine.revision();
    if (this.cached?.revision !== revision) {
      this.cached = {
        revision,
        etag: `"${revision}"`,
        body: buildBundle(engine.dataJson(), revision, [BUNDLE_ROOT]),
      };
    }
    return this.cached;
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    if (path === '/healthz') {
      if (!readOnly(method, res)) return;
      text(res, method, 200, 'ok\n');
      return;
    }
    if (!BUNDLE_PATHS.includes(path)) {
      text(res, method, 404, 'not found\n');
      return;
    }
    if (!readOnly(method, res)) return;
    if (!this.opts.engine.isReady()) {
      res.setHeader('retry-after', String(this.opts.retryAfterSeconds ?? 1));
      text(res, method, 503, 'the model is being rebuilt from the API\n');
      return;
    }
    const bundle = this.current();
    res.setHeader('etag', bundle.etag);
    // OPA decides by ETag; intermediaries must ask again rather than serve a stale bundle.
    res.setHeader('cache-control', 'no-cache');
    if (matches(req.headers['if-none-match'], bundle.etag)) {
      res.writeHead(304).end();
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/gzip',
      'content-length': String(bundle.body.length),
    });
    res.end(method === 'HEAD' ? undefined : bundle.body);
  }
}

/** GET and HEAD only; answers 405 otherwise and says so. */
function readOnly(method: string, res: ServerResponse): boolean {
  if (method === 'GET' || method === 'HEAD') return true;
  res.setHeader('allow', 'GET, HEAD');
  text(res, method, 405, 'only GET and HEAD\n');
  return false;
}

function text(res: ServerResponse, method: string, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
  });
  res.end(method === 'HEAD' ? undefined : body);
}

/**
 * Whether `If-None-Match` names `etag` (RFC 9110 §13.1.2: a list, `*`, and weak
 * comparison, so `W/"x"` matches `"x"`).
 */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((raw) => {
    const t = raw.trim();
    return t === '*' || (t.startsWith('W/') ? t.slice(2) : t) === etag;
  });
}
