/**
 * The HTTPS server the apiserver calls for admission (validating, mutating) and CRD
 * conversion: handlers registered by path, a {@link Runnable} the manager starts on
 * every replica (`manager.add(server, { needLeaderElection: false })`: the apiserver
 * calls whichever pod the Service picks) or that runs on its own.
 *
 * Guarantees:
 * - Every AdmissionReview gets an answer carrying its uid: the handler's decision, or a
 *   denial (code 500, reason `InternalError`) when the handler throws, and (504,
 *   `Timeout`) when it outlives the deadline; both logged. A conversion handler's error
 *   fails the whole ConversionReview (`Failure`, with the message), never a partial list.
 * - What is not a review gets an HTTP error with a message, never a guess: 404 for an
 *   unregistered path, 405 for a method other than POST, 415 for a body that is not
 *   JSON, 400 for malformed JSON or the wrong kind or version, 413 for a body over
 *   `maxBodyBytes` (7 MiB by default: the apiserver sends objects of up to ~3 MiB, twice
 *   in an UPDATE). The apiserver then applies the webhook's `failurePolicy`.
 * - The deadline: the apiserver waits `timeoutSeconds` (10 s by default, 30 s at most)
 *   and says so in the `timeout` query parameter; the handler's signal aborts at that
 *   deadline or `handlerTimeoutMs`, whichever is sooner, and when the caller hangs up.
 * - Certificates are re-read when their files change (cert-manager rotation), see
 *   {@link CertificateReloader}; connections already open keep their session.
 * - `stop()` stops accepting at once, lets in-flight requests finish for up to
 *   `drainTimeoutMs` (default 10 s: nothing the apiserver still waits for lasts longer),
 *   then closes every connection.
 * - Keep-alive: idle connections are kept 120 s, longer than the Go client's 90 s idle
 *   timeout, so that the client, not the server, closes an idle connection and a POST
 *   never races a server-side close.
 *
 * Metrics, controller-runtime's: `controller_runtime_webhook_requests_total{webhook,code}`,
 * `controller_runtime_webhook_latency_seconds{webhook}`,
 * `controller_runtime_webhook_requests_in_flight{webhook}` (`webhook` is the path), and
 * `controller_runtime_webhook_panics_total` (handlers that threw).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type Logger, pino } from 'pino';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { type Clock, realClock } from '../base/clock.ts';
import { sharedCounter, sharedGauge, sharedHistogram } from '../base/shared-metrics.ts';
import type { KubeObject } from '../client/types.ts';
import type { Runnable } from '../control/runnable.ts';
import { CertificateReloader } from '../tls/certificate-reloader.ts';
import { CERT_FILE, KEY_FILE, type PemPair } from '../tls/certificates.ts';
import {
  ADMISSION_API_VERSION,
  AdmissionReason,
  type AdmissionRequest,
  type AdmissionResponse,
  admissionResponse,
  deny,
  type MutatingHandler,
  type MutationDecision,
  type ValidatingHandler,
} from './admission.ts';
import {
  CONVERSION_API_VERSION,
  type ConversionHandler,
  type ConversionRequest,
  type ConversionResponse,
  convertAll,
} from './conversion.ts';

/** controller-runtime's default certificate directory. */
export const DEFAULT_CERT_DIR = '/tmp/k8s-webhook-server/serving-certs';
/** controller-runtime's default port. */
export const DEFAULT_WEBHOOK_PORT = 9443;
const MiB = 1024 * 1024;

export interface WebhookServerOptions {
  /** For logs and the manager's health: default `webhook-server`. */
  readonly name?: string;
  /** Default: every interface. Tests use `127.0.0.1`. */
  readonly host?: string;
  /** Default 9443; 0 picks a free port (read it from {@link WebhookServer.port}). */
  readonly port?: number;
  /** Where `tls.crt` and `tls.key` are (a mounted cert-manager Secret). Default {@link DEFAULT_CERT_DIR}. */
  readonly certDir?: string;
  /** Override the file names inside `certDir`. */
  readonly certFile?: string;
  readonly keyFile?: string;
  /** How often the certificate files are re-read besides file-system events. Default 10 s. */
  readonly certReloadIntervalMs?: number;
  /** Default 7 MiB. */
  readonly maxBodyBytes?: number;
  /** Upper bound of a handler's time, below the apiserver's own `timeout`. Default 10 s. */
  readonly handlerTimeoutMs?: number;
  /** How long `stop()` waits for in-flight requests. Default 10 s. */
  readonly drainTimeoutMs?: number;
  readonly logger?: Logger;
  /** Where the webhook metrics go (the manager's registry); none when absent. */
  readonly registry?: Registry;
  readonly clock?: Clock;
}

type Route =
  | { readonly type: 'validating'; readonly handler: ValidatingHandler }
  | { readonly type: 'mutating'; readonly handler: MutatingHandler }
  | { readonly type: 'conversion'; readonly handler: ConversionHandler };

/** An answer that is not a review: an HTTP status with a message, as a metav1 Status. */
class HttpFailure extends Error {
  readonly code: number;
  readonly reason: string;
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

/** The outcome of running a handler under a deadline. */
type Run<T> =
  | { readonly kind: 'done'; readonly value: T }
  | { readonly kind: 'failed'; readonly error: unknown }
  | { readonly kind: 'timedOut'; readonly afterMs: number };

interface Metrics {
  readonly requests: Counter<'webhook' | 'code'>;
  readonly latency: Histogram<'webhook'>;
  readonly inFlight: Gauge<'webhook'>;
  readonly panics: Counter<never>;
}

export class WebhookServer implements Runnable {
  readonly name: string;
  private readonly opts: WebhookServerOptions;
  private readonly routes = new Map<string, Route>();
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly metrics: Metrics;
  private server: Server | undefined;
  private reloader: CertificateReloader | undefined;
  private inFlight = 0;
  private drained: (() => void)[] = [];
  private stopping: Promise<void> | undefined;

  constructor(opts: WebhookServerOptions = {}) {
    this.opts = opts;
    this.name = opts.name ?? 'webhook-server';
    this.log = (opts.logger ?? pino()).child({ runnable: this.name });
    this.clock = opts.clock ?? realClock;
    this.metrics = {
      requests: sharedCounter(
        opts.registry,
        'controller_runtime_webhook_requests_total',
        'Total number of admission requests by HTTP status code.',
        ['webhook', 'code'],
      ),
      latency: sharedHistogram(
        opts.registry,
        'controller_runtime_webhook_latency_seconds',
        'Histogram of the latency of processing admission requests',
        ['webhook'],
        [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      ),
      inFlight: sharedGauge(
        opts.registry,
        'controller_runtime_webhook_requests_in_flight',
        'Current number of admission requests being served.',
        ['webhook'],
      ),
      panics: sharedCounter(
        opts.registry,
        'controller_runtime_webhook_panics_total',
        'Total number of webhook handlers that threw.',
        [],
      ),
    };
  }

  /** Answers AdmissionReviews at `path` with `handler`'s decision (allow or deny). */
  validating<T extends KubeObject = KubeObject>(path: string, handler: ValidatingHandler<T>): this {
    return this.route(path, { type: 'validating', handler: handler as ValidatingHandler });
  }

  /** Answers AdmissionReviews at `path` with `handler`'s decision (allow, deny, or a change). */
  mutating<T extends KubeObject = KubeObject>(path: string, handler: MutatingHandler<T>): this {
    return this.route(path, { type: 'mutating', handler: handler as MutatingHandler });
  }

  /** Answers ConversionReviews at `path`, converting each object with `handler`. */
  conversion(path: string, handler: ConversionHandler): this {
    return this.route(path, { type: 'conversion', handler });
  }

  private route(path: string, route: Route): this {
    if (!path.startsWith('/')) throw new Error(`webhook path ${path} must start with /`);
    if (this.routes.has(path)) throw new Error(`a webhook is already registered at ${path}`);
    this.routes.set(path, route);
    return this;
  }

  /** The port listened on (the chosen one when `port` was 0). */
  get port(): number {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (!address) throw new Error(`${this.name} is not listening`);
    return address.port;
  }

  async start(signal?: AbortSignal): Promise<void> {
    if (this.server) throw new Error(`${this.name} is already started`);
    const dir = this.opts.certDir ?? DEFAULT_CERT_DIR;
    const reloader = new CertificateReloader({
      certFile: join(dir, this.opts.certFile ?? CERT_FILE),
      keyFile: join(dir, this.opts.keyFile ?? KEY_FILE),
      intervalMs: this.opts.certReloadIntervalMs,
      clock: this.clock,
      log: this.log,
      onChange: (pair: PemPair) => this.server?.setSecureContext(pair),
    });
    const pair = await reloader.load().catch((err: unknown) => {
      throw new Error(
        `${this.name}: no usable serving certificate in ${dir} (${err instanceof Error ? err.message : String(err)}); ` +
          'mount the Secret cert-manager issues there, or write one with selfSignedCertificates() and writeCertificates()',
        { cause: err },
      );
    });
    this.reloader = reloader;
    const server = createServer(
      {
        ...pair,
        keepAlive: true,
        keepAliveTimeout: 120_000,
        // Past the apiserver's longest timeout (30 s): a client that stops sending is dropped.
        requestTimeout: 60_000,
        headersTimeout: 30_000,
      },
      (req, res) => void this.serve(req, res),
    );
    this.server = server;
    this.stopping = undefined;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port ?? DEFAULT_WEBHOOK_PORT, this.opts.host, () => {
        server.off('error', reject);
        resolve();
      });
    }).catch((err: unknown) => {
      reloader.stop();
      this.server = undefined;
      throw err;
    });
    server.on('error', (err) => this.log.error({ err }, 'webhook server error'));
    this.log.info({ port: this.port, paths: [...this.routes.keys()] }, 'webhook server listening');
    // Aborted while starting: stop at once (a listener added now would never fire).
    if (signal?.aborted) await this.stop();
    else signal?.addEventListener('abort', () => void this.stop(), { once: true });
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.reloader?.stop();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    if (this.inFlight > 0) {
      const bound = this.opts.drainTimeoutMs ?? 10_000;
      let timer: ReturnType<Clock['setTimeout']> | undefined;
      const gaveUp = await Promise.race([
        new Promise<false>((resolve) => this.drained.push(() => resolve(false))),
        new Promise<true>((resolve) => {
          timer = this.clock.setTimeout(() => resolve(true), bound);
        }),
      ]);
      if (timer) this.clock.clearTimeout(timer);
      if (gaveUp)
        this.log.warn(
          { inFlight: this.inFlight },
          `webhook requests still running after ${bound} ms; closing`,
        );
    }
    server.closeAllConnections();
    await closed;
    this.server = undefined;
    this.log.info('webhook server stopped');
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://webhook');
    const path = url.pathname;
    const route = this.routes.get(path);
    // Keep-alive ends with the server: answered connections close instead of idling.
    if (this.stopping) res.setHeader('connection', 'close');
    if (!route) {
      writeStatus(res, new HttpFailure(404, 'NotFound', `no webhook is registered at ${path}`));
      return;
    }
    const labels = { webhook: path };
    this.inFlight++;
    this.metrics.inFlight.inc(labels);
    const endTimer = this.metrics.latency.startTimer(labels);
    let code = 500;
    try {
      code = await this.answer(route, req, res, url);
    } catch (err) {
      // Only a failure to write the answer gets here (the caller went away).
      this.log.warn({ err, path }, 'webhook answer could not be written');
    } finally {
      endTimer();
      this.metrics.inFlight.dec(labels);
      this.metrics.requests.inc({ webhook: path, code: String(code) });
      if (--this.inFlight === 0) for (const f of this.drained.splice(0)) f();
    }
  }

  /** Answers one request; returns the HTTP status written. */
  private async answer(route: Route, req: IncomingMessage, res: ServerResponse, url: URL): Promise<number> {
    let body: unknown;
    try {
      if (req.method !== 'POST')
        throw new HttpFailure(405, 'MethodNotAllowed', `${req.method} is not allowed: POST a review`);
      const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
      if (type !== 'application/json') {
        throw new HttpFailure(
          415,
          'UnsupportedMediaType',
          `content-type ${type || '(none)'} is not application/json`,
        );
      }
      body = parseJson(await readBody(req, this.opts.maxBodyBytes ?? 7 * MiB));
    } catch (err) {
      if (!(err instanceof HttpFailure)) throw err;
      if (err.code === 413) res.setHeader('connection', 'close');
      return writeStatus(res, err);
    }
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort(new Error('the caller hung up'));
    });
    const deadlineMs = Math.min(
      this.opts.handlerTimeoutMs ?? 10_000,
      goDurationMs(url.searchParams.get('timeout')),
    );
    try {
      switch (route.type) {
        case 'validating':
        case 'mutating': {
          const request = admissionRequestOf(body);
          const response = await this.admit(route, url.pathname, request, deadlineMs, abort);
          return writeJson(res, 200, {
            apiVersion: ADMISSION_API_VERSION,
            kind: 'AdmissionReview',
            response,
          });
        }
        case 'conversion': {
          const request = conversionRequestOf(body);
          const response = await this.convert(route.handler, url.pathname, request, deadlineMs, abort);
          return writeJson(res, 200, {
            apiVersion: CONVERSION_API_VERSION,
            kind: 'ConversionReview',
            response,
          });
        }
        default: {
          const never: never = route;
          throw new Error(`unknown route ${JSON.stringify(never)}`);
        }
      }
    } catch (err) {
      if (!(err instanceof HttpFailure)) throw err;
      return writeStatus(res, err);
    } finally {
      abort.abort(new Error('answered'));
    }
  }

  private async admit(
    route: Route & { type: 'validating' | 'mutating' },
    path: string,
    request: AdmissionRequest,
    deadlineMs: number,
    abort: AbortController,
  ): Promise<AdmissionResponse> {
    const what = {
      path,
      uid: request.uid,
      operation: request.operation,
      kind: request.kind?.kind,
      namespace: request.namespace,
      name: request.name,
    };
    const run = await this.run(deadlineMs, abort, (signal) => route.handler(request, { signal }));
    let decision: MutationDecision;
    switch (run.kind) {
      case 'done':
        decision = run.value;
        break;
      case 'timedOut':
        this.log.warn(what, `admission handler did not answer within ${run.afterMs} ms`);
        return admissionResponse(
          request,
          deny(AdmissionReason.HandlerTimedOut, `the webhook did not decide within ${run.afterMs} ms`, {
            code: 504,
          }),
        );
      case 'failed':
        return this.handlerFailed(request, run.error, what);
    }
    try {
      if (route.type === 'validating' && decision.type !== 'allow' && decision.type !== 'deny') {
        throw new Error(`a validating webhook cannot change the object (it answered ${decision.type})`);
      }
      return admissionResponse(request, decision);
    } catch (err) {
      return this.handlerFailed(request, err, what);
    }
  }

  private handlerFailed(request: AdmissionRequest, err: unknown, what: object): AdmissionResponse {
    this.metrics.panics.inc();
    const message = err instanceof Error ? err.message : String(err);
    this.log.error({ ...what, err }, 'admission handler failed; the request is denied');
    return admissionResponse(
      request,
      deny(AdmissionReason.HandlerFailed, `the webhook failed: ${message}`, { code: 500 }),
    );
  }

  private async convert(
    handler: ConversionHandler,
    path: string,
    request: ConversionRequest,
    deadlineMs: number,
    abort: AbortController,
  ): Promise<ConversionResponse> {
    const what = {
      path,
      uid: request.uid,
      desiredAPIVersion: request.desiredAPIVersion,
      objects: request.objects.length,
    };
    const run = await this.run(deadlineMs, abort, (signal) => convertAll(request, handler, signal));
    switch (run.kind) {
      case 'done':
        if (run.value.result.status === 'Failure')
          this.log.warn({ ...what, message: run.value.result.message }, 'conversion failed');
        return run.value;
      case 'timedOut':
        this.log.warn(what, `conversion did not finish within ${run.afterMs} ms`);
        return failedConversion(
          request,
          `conversion to ${request.desiredAPIVersion} did not finish within ${run.afterMs} ms`,
        );
      case 'failed': {
        this.metrics.panics.inc();
        this.log.error({ ...what, err: run.error }, 'conversion failed');
        const message = run.error instanceof Error ? run.error.message : String(run.error);
        return failedConversion(request, message);
      }
    }
  }

  /** Runs `fn` until it settles or `ms` passes; the signal it gets aborts then. */
  private async run<T>(
    ms: number,
    abort: AbortController,
    fn: (signal: AbortSignal) => T | Promise<T>,
  ): Promise<Run<T>> {
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    const timedOut = new Promise<Run<T>>((resolve) => {
      timer = this.clock.setTimeout(() => {
        abort.abort(new Error(`the webhook deadline of ${ms} ms passed`));
        resolve({ kind: 'timedOut', afterMs: ms });
      }, ms);
    });
    const ran = (async (): Promise<Run<T>> => {
      try {
        return { kind: 'done', value: await fn(abort.signal) };
      } catch (error) {
        return { kind: 'failed', error };
      }
    })();
    try {
      return await Promise.race([ran, timedOut]);
    } finally {
      if (timer) this.clock.clearTimeout(timer);
    }
  }
}

function failedConversion(request: ConversionRequest, message: string): ConversionResponse {
  return { uid: request.uid, convertedObjects: [], result: { status: 'Failure', message } };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function admissionRequestOf(body: unknown): AdmissionRequest {
  if (!isRecord(body) || body.kind !== 'AdmissionReview' || body.apiVersion !== ADMISSION_API_VERSION) {
    const got = isRecord(body) ? `${String(body.apiVersion)} ${String(body.kind)}` : typeof body;
    throw new HttpFailure(
      400,
      'BadRequest',
      `expected an ${ADMISSION_API_VERSION} AdmissionReview, got ${got} (register the webhook with admissionReviewVersions: [v1])`,
    );
  }
  const request = body.request;
  if (!isRecord(request) || typeof request.uid !== 'string' || request.uid === '') {
    throw new HttpFailure(400, 'BadRequest', 'the AdmissionReview has no request with a uid');
  }
  return request as unknown as AdmissionRequest;
}

function conversionRequestOf(body: unknown): ConversionRequest {
  if (!isRecord(body) || body.kind !== 'ConversionReview' || body.apiVersion !== CONVERSION_API_VERSION) {
    const got = isRecord(body) ? `${String(body.apiVersion)} ${String(body.kind)}` : typeof body;
    throw new HttpFailure(
      400,
      'BadRequest',
      `expected an ${CONVERSION_API_VERSION} ConversionReview, got ${got} (register the CRD with conversionReviewVersions: [v1])`,
    );
  }
  const request = body.request;
  if (
    !isRecord(request) ||
    typeof request.uid !== 'string' ||
    request.uid === '' ||
    typeof request.desiredAPIVersion !== 'string' ||
    !Array.isArray(request.objects)
  ) {
    throw new HttpFailure(
      400,
      'BadRequest',
      'the ConversionReview has no request with a uid, desiredAPIVersion and objects',
    );
  }
  return request as unknown as ConversionRequest;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpFailure(400, 'BadRequest', `the body is not JSON: ${(err as Error).message}`);
  }
}

/** The body as text, refused with 413 past `limit` bytes (announced or received). */
function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const tooLarge = (): HttpFailure =>
    new HttpFailure(
      413,
      'RequestEntityTooLarge',
      `the body exceeds the webhook server's limit of ${limit} bytes`,
    );
  const announced = Number(req.headers['content-length'] ?? 0);
  if (announced > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

function writeJson(res: ServerResponse, code: number, body: unknown): number {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
  return code;
}

/** An HTTP error as a metav1 Status, the shape the apiserver reads error bodies in. */
function writeStatus(res: ServerResponse, failure: HttpFailure): number {
  return writeJson(res, failure.code, {
    apiVersion: 'v1',
    kind: 'Status',
    status: 'Failure',
    code: failure.code,
    reason: failure.reason,
    message: failure.message,
  });
}

/**
 * A Go duration as the apiserver writes the `timeout` parameter (`10s`, `1m30s`,
 * `500ms`) in milliseconds; Infinity when absent or unreadable, so the server's own
 * bound applies.
 */
export function goDurationMs(text: string | null): number {
  if (!text) return Number.POSITIVE_INFINITY;
  const unit: Record<string, number> = {
    h: 3_600_000,
    m: 60_000,
    s: 1000,
    ms: 1,
    us: 0.001,
    µs: 0.001,
    ns: 0.000001,
  };
  let total = 0;
  let rest = text;
  while (rest.length > 0) {
    const m = /^(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/.exec(rest);
    if (!m) return Number.POSITIVE_INFINITY;
    total += Number(m[1]) * (unit[m[2] as string] ?? 0);
    rest = rest.slice(m[0].length);
  }
  return total;
}
