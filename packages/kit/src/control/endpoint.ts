import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import { CertificateReloader, readPair } from '../tls/certificate-reloader.ts';
import type { HealthChecks } from './health.ts';
import { decisionStatus, type RequestAuthorizer } from './request-authorizer.ts';

export interface ProbeEndpointOptions {
  /** 0 picks a free port (tests). */
  readonly port: number;
  /** Default `0.0.0.0`: the kubelet probes the pod's IP. */
  readonly host?: string;
}

export interface MetricsEndpointOptions {
  /** 0 picks a free port (tests). */
  readonly port: number;
  /** Default `127.0.0.1`; with `secure`, `0.0.0.0`. */
  readonly host?: string;
  /** HTTPS, with every request authenticated and authorized by the apiserver. */
  readonly secure?: SecureMetricsOptions;
}

export interface SecureMetricsOptions {
  /** PEM certificate and key, or a directory with `tls.crt` and `tls.key`; self-signed when absent. */
  readonly tls?: { readonly cert: string; readonly key: string } | { readonly certDir: string };
}

export const DEFAULT_PROBE_HOST = '0.0.0.0';
export const DEFAULT_PROBE_PORT = 8081;
export const DEFAULT_METRICS_HOST = '127.0.0.1';
export const DEFAULT_METRICS_PORT = 8080;

/** Answers one request whose path matched; `rest` is what follows the route's path (`/name`, or ''). */
export type Route = (req: IncomingMessage, res: ServerResponse, rest: string) => Promise<void>;

export class Endpoint {
  readonly name: string;
  private readonly routes: ReadonlyMap<string, Route>;
  private server: Server | undefined;
  private reloader: CertificateReloader | undefined;

  constructor(name: string, routes: ReadonlyMap<string, Route>) {
    this.name = name;
    this.routes = routes;
  }

  /**
   * Listens (over TLS when `tls` is given); resolves once listening. With `tls.certDir`,
   * the pair is re-read from that directory when it changes (cert-manager renews it into
   * the mounted Secret), so a rotated certificate is served without a restart.
   */
  async listen(port: number, host: string, tls?: EndpointTls): Promise<void> {
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      this.serve(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`${err instanceof Error ? err.message : String(err)}\n`);
      });
    };
    let pair = tls && { cert: tls.cert, key: tls.key };
    let secure: TlsServer | undefined;
    if (tls?.certDir) {
      this.reloader = new CertificateReloader({
        certFile: join(tls.certDir, 'tls.crt'),
        keyFile: join(tls.certDir, 'tls.key'),
        onChange: (next) => secure?.setSecureContext(next),
      });
      pair = await this.reloader.load();
    }
    if (pair) secure = createTlsServer(pair, handler);
    const server = secure ?? createServer(handler);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  }

  /** The address once listening. */
  get address(): { host: string; port: number } | undefined {
    const a = this.server?.address();
    return a && typeof a === 'object' ? { host: a.address, port: a.port } : undefined;
  }

  /** Stops listening and cuts open connections; resolves once closed. */
  async close(): Promise<void> {
    this.reloader?.stop();
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((r) => server.close(() => r()));
    server.closeAllConnections();
    await closed;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    for (const [prefix, route] of this.routes) {
      if (path === prefix || path.startsWith(`${prefix}/`)) {
        await route(req, res, path.slice(prefix.length));
        return;
      }
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  }
}

/** `/healthz` (and `/livez`, its alias) and `/readyz`: 200 when every check passes, else 500 / 503. */
export function probeRoutes(health: HealthChecks, ready: HealthChecks): Map<string, Route> {
  const route =
    (checks: HealthChecks, failStatus: number): Route =>
    async (_req, res, rest) => {
      const only = rest.replace(/^\//, '') || undefined;
      if (only !== undefined && !checks.has(only)) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end(`no ${checks.kind} check named ${only}\n`);
        return;
      }
      const report = await checks.run(only);
      res
        .writeHead(report.ok ? 200 : failStatus, { 'content-type': 'text/plain' })
        .end(checks.render(report));
    };
  // Liveness failing restarts the pod: 500 as controller-runtime answers. Readiness
  // failing only takes it out of Services: 503, "not now", as this kit always answered.
  const healthz = route(health, 500);
  return new Map([
    ['/healthz', healthz],
    ['/livez', healthz],
    ['/readyz', route(ready, 503)],
  ]);
}

/**
 * `/metrics`: the registry in Prometheus's text format; with `authorizer`, only for those
 * RBAC allows (401, 403; 429 with Retry-After while the authorizer's reviews are all
 * busy; 500 when the reviews fail).
 */
export function metricsRoute(registry: Registry, authorizer?: RequestAuthorizer): Map<string, Route> {
  const route: Route = async (req, res, rest) => {
    if (rest !== '') {
      res.writeHead(404).end();
      return;
    }
    if (authorizer) {
      const decision = await authorizer.authorize(req.headers.authorization, '/metrics', 'get');
      if (decision.kind !== 'allowed') {
        const headers: Record<string, string> = { 'content-type': 'text/plain' };
        if (decision.kind === 'unauthenticated') headers['www-authenticate'] = 'Bearer';
        // Too many reviews in flight: said at once, so a flood queues nowhere.
        if (decision.kind === 'overloaded') headers['retry-after'] = String(decision.retryAfterSeconds);
        res.writeHead(decisionStatus(decision), headers).end(`${decision.message}\n`);
        return;
      }
    }
    res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
  };
  return new Map([['/metrics', route]]);
}

/** A TLS endpoint's pair, and the directory it is reloaded from (if any). */
export interface EndpointTls {
  readonly cert: string;
  readonly key: string;
  readonly certDir?: string;
}

/** The secure endpoint's certificate: given, read from a directory (and reloaded), or self-signed. */
export async function metricsCertificate(opts: SecureMetricsOptions): Promise<EndpointTls> {
  const tls = opts.tls;
  if (tls && 'cert' in tls) return { cert: tls.cert, key: tls.key };
  if (tls && 'certDir' in tls) {
    const pair = await readPair(join(tls.certDir, 'tls.crt'), join(tls.certDir, 'tls.key'));
    return { ...pair, certDir: tls.certDir };
  }
  // Loaded on use: an operator that never serves secure metrics never loads the X.509 library.
  const { selfSignedCertificates } = await import('../tls/certificates.ts');
  const made = await selfSignedCertificates();
  return { cert: made.serving.cert, key: made.serving.key };
}
