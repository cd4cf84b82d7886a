/**
 * The HTTPS server the apiserver calls for admission (validating, mutating) and CRD
 * conversion: handlers registered by path, a {@link Runnable} the manager starts on
 * every replica (`manager.add(server, { needLeaderElection: false })`: the apiserver
 * calls whichever pod the Service picks) or that runs on its own.
 *
 * Guarantees:
 * - Every AdmissionReview gets an answer carrying its uid: the handler's decision, or a
 *   denial (code 500, reason `InternalError`) when the handler throws, and (504,
 *   `Timeout`) when it outlives the apiserver's deadline; both logged. A conversion
 *   handler's error fails the whole ConversionReview (`Failure`, with the message),
 *   never a partial list.
 * - Every refusal of the server's own is a review too, HTTP 200, so that the apiserver
 *   applies it whatever the webhook's `failurePolicy` (an HTTP error is a failed call,
 *   and under `Ignore` a failed call admits the object unchecked; controller-runtime
 *   answers the same way): on an admission path a denial with `status.code` 400 (not
 *   JSON, the wrong kind or version), 413 (over `maxBodyBytes`, 7 MiB by default: the
 *   apiserver sends objects of up to ~3 MiB, twice in an UPDATE), 405 (not POST), 415
 *   (not JSON content); on a conversion path a `Failure` with the same message; at an
 *   unregistered path (404) whichever review the body is, and a metav1 Status when it
 *   is none. The uid is the request's whenever it can be recovered: from the parsed
 *   body, or, for a body that is too large or does not parse, from its first KiB, where
 *   the apiserver writes it (`{"kind":…,"apiVersion":…,"request":{"uid":…`). When it
 *   cannot be, the answer's uid is empty, which the apiserver reads as an invalid
 *   response (`expected response.uid=…`): a failed call, so for admission the
 *   webhook's `failurePolicy` applies (a conversion fails either way, there being no
 *   policy). A v1beta1 review is answered in v1beta1, whose uid the apiserver does not
 *   check: it applies the refusal, whose message says to register v1.
 * - No deadline of the server's own: the handler's signal aborts at the apiserver's
 *   deadline (its `timeout` query parameter, the webhook's `timeoutSeconds` rounded up;
 *   30 s, the apiserver's maximum, without one, as for conversion calls, which carry
 *   none) or when the caller hangs up, and a handler still running then is answered
 *   with the `Timeout` denial. The apiserver has
 *   stopped waiting by then and applied `failurePolicy`, so a slow webhook declared
 *   optional (`Ignore`) is admitted, never denied by us first. `handlerTimeoutMs` aborts
 *   the signal sooner for handlers that want to give up early and answer themselves;
 *   the server still does not answer for them before the apiserver's deadline.
 * - In-place mutation works: a mutating handler gets its own parse of the request, and
 *   a `mutateTo` is diffed against a pristine parse of the same bytes, so
 *   `w.spec.replicas = 3; return mutateTo(w)` patches replicas to 3.
 * - Certificates are re-read when their files change (cert-manager rotation), see
 *   {@link CertificateReloader}; connections already open keep their session. With
 *   `clientCA`, callers must present a client certificate signed by that CA, or the
 *   TLS handshake fails (controller-runtime's `ClientCAName`); a CA file is reloaded
 *   with the serving pair.
 * - `stop()` stops accepting at once, lets in-flight requests finish for up to
 *   `drainTimeoutMs` (default 10 s), then closes every connection.
 * - Keep-alive: idle connections are kept 120 s, longer than the Go client's 90 s idle
 *   timeout, so that the client, not the server, closes an idle connection and a POST
 *   never races a server-side close.
 *
 * Metrics, controller-runtime's: `controller_runtime_webhook_requests_total{webhook,code}`
 * (`code` is the HTTP status: 200 for every review answered, refusals included, as in
 * controller-runtime), `controller_runtime_webhook_latency_seconds{webhook}`,
 * `controller_runtime_webhook_requests_in_flight{webhook}` (`webhook` is the path), and
 * `controller_runtime_webhook_panics_total` (handlers that threw).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join, resolve as resolvePath } from 'node:path';
import { type Logger, pino } from 'pino';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { type Clock, realClock, type TimerHandle } from '../base/clock.ts';
import { sharedCounter, sharedGauge, sharedHistogram } from '../base/shared-metrics.ts';
import type { KubeObject } from '../client/types.ts';
import type { Runnable } from '../control/runnable.ts';
import { CertificateReloader, checkCa, type TlsMaterial } from '../tls/certificate-reloader.ts';
import { CERT_FILE, KEY_FILE } from '../tls/certificates.ts';
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
/** The default body limit: the apiserver sends objects of up to ~3 MiB, twice in an UPDATE. */
export const DEFAULT_MAX_BODY_BYTES = 7 * MiB;
/**
 * The apiserver's longest webhook timeout (`timeoutSeconds` is at most 30): the deadline
 * for a request that carries no `timeout` parameter.
 */
export const APISERVER_MAX_TIMEOUT_MS = 30_000;
/**
 * How much of a body past `maxBodyBytes` is still read, and thrown away, before the
 * server answers. The apiserver's Go client writes the whole body before it reads the
 * answer; a server that answers and closes mid-body makes that write fail, and the
 * apiserver sees a failed call (so `failurePolicy`) instead of our denial. 16 MiB
 * covers anything the apiserver can send; past it (announced or streamed) the server
 * reads only the head, answers and closes the connection.
 */
const OVERSIZED_DRAIN_BYTES = 16 * MiB;
/**
 * How much of an oversized or unparsable body is kept to recover the request's uid:
 * the apiserver writes it within the first hundred bytes.
 */
const UID_HEAD_BYTES = 1024;
/**
 * The uid at the head of a review as the apiserver encodes it (Go writes struct fields
 * in order: `kind`, `apiVersion`, then `request` whose first field is `uid`). Anchored
 * at the top level, so a `request.uid` nested inside the object cannot match.
 */
const LEADING_UID =
  /^\s*\{\s*(?:"(?:kind|apiVersion)"\s*:\s*"[^"\\]*"\s*,\s*)*"request"\s*:\s*\{\s*"uid"\s*:\s*"([^"\\]*)"/;
/** The earlier review versions, echoed in a refusal so that an apiserver sending them reads it. */
const ADMISSION_V1BETA1 = 'admission.k8s.io/v1beta1';
const CONVERSION_V1BETA1 = 'apiextensions.k8s.io/v1beta1';

/** A CA for client certificates: a PEM file (relative paths are in `certDir`) or the PEM itself. */
export type ClientCaSource = { readonly file: string } | { readonly pem: string };

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
  /**
   * Require and verify a client certificate signed by this CA (controller-runtime's
   * `ClientCAName` is `{ file: '<name>' }`): a caller without one, or with one from
   * another CA, fails the TLS handshake. The apiserver presents one when its
   * `--admission-control-config-file` names a kubeconfig with a user for the webhook
   * (docs/kit.md, Webhooks). A file is re-read with the serving pair. Default: none.
   */
  readonly clientCA?: ClientCaSource;
  /** How often the certificate files are re-read besides file-system events. Default 10 s. */
  readonly certReloadIntervalMs?: number;
  /** Default {@link DEFAULT_MAX_BODY_BYTES} (7 MiB). A larger body is denied with 413. */
  readonly maxBodyBytes?: number;
  /**
   * Abort a handler's signal this long after the request arrived, when that is sooner
   * than the apiserver's deadline: for handlers that catch the abort and answer
   * themselves (fall back to `allow()`, say). The server does not answer for a handler
   * before the apiserver's deadline whatever this says: a denial sent earlier would
   * override the webhook's `failurePolicy`. Beware that a handler that throws on the
   * abort is answered with a 500 denial, which the apiserver, still waiting, applies.
   * Default: none (the apiserver's deadline only).
   */
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

/** The review a path answers in, and so the shape of its refusals. */
type ReviewKind = 'admission' | 'conversion';

/** A refusal of the server's own: a code, a CamelCase reason, a message, and the uid when known. */
class Refusal extends Error {
  readonly code: number;
  readonly reason: string;
  readonly uid: string;
  /** The review version to answer in, when the caller sent an earlier one. */
  readonly apiVersion: string | undefined;
  /** The body was not read to its end: answer, then close the connection. */
  readonly unread: boolean;
  constructor(
    code: number,
    reason: string,
    message: string,
    recovered: { uid?: string; apiVersion?: string; unread?: boolean } = {},
  ) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.uid = recovered.uid ?? '';
    this.apiVersion = recovered.apiVersion;
    this.unread = recovered.unread ?? false;
  }
}

/** When a request's handler is told to stop, and when the server answers for it (clock times). */
interface Deadline {
  readonly arrived: number;
  readonly abortAt: number;
  readonly answerAt: number;
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
    const clientCA = this.opts.clientCA;
    const caFile = clientCA && 'file' in clientCA ? resolvePath(dir, clientCA.file) : undefined;
    const caPem = clientCA && 'pem' in clientCA ? clientCA.pem : undefined;
    if (caPem !== undefined) checkCa(caPem, `${this.name}: clientCA.pem`);
    const reloader = new CertificateReloader({
      certFile: join(dir, this.opts.certFile ?? CERT_FILE),
      keyFile: join(dir, this.opts.keyFile ?? KEY_FILE),
      ...(caFile ? { caFile } : {}),
      intervalMs: this.opts.certReloadIntervalMs,
      clock: this.clock,
      log: this.log,
      // A new secure context replaces the whole old one: the client CA goes with it.
      onChange: (material: TlsMaterial) =>
        this.server?.setSecureContext(caPem === undefined ? material : { ...material, ca: caPem }),
    });
    const material = await reloader.load().catch((err: unknown) => {
      throw new Error(
        `${this.name}: no usable serving certificate in ${dir}${caFile ? ` or client CA in ${caFile}` : ''} ` +
          `(${err instanceof Error ? err.message : String(err)}); ` +
          'mount the Secret cert-manager issues there, or write one with selfSignedCertificates() and writeCertificates()',
        { cause: err },
      );
    });
    this.reloader = reloader;
    const server = createServer(
      {
        ...material,
        ...(caPem === undefined ? {} : { ca: caPem }),
        // Verified by the TLS layer: a caller without a certificate from the CA never gets a request in.
        ...(clientCA ? { requestCert: true, rejectUnauthorized: true } : {}),
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
    this.log.info(
      { port: this.port, paths: [...this.routes.keys()], clientCA: clientCA !== undefined },
      'webhook server listening',
    );
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
      let timer: TimerHandle | undefined;
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

  private get maxBodyBytes(): number {
    return this.opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrived = this.clock.now();
    const url = new URL(req.url ?? '/', 'https://webhook');
    const path = url.pathname;
    const route = this.routes.get(path);
    // Keep-alive ends with the server: answered connections close instead of idling.
    if (this.stopping) res.setHeader('connection', 'close');
    if (!route) {
      // Not counted: a scanner's paths would make a metric series each.
      await this.notFound(req, res, path).catch((err: unknown) =>
        this.log.warn({ err, path }, 'webhook answer could not be written'),
      );
      return;
    }
    const labels = { webhook: path };
    this.inFlight++;
    this.metrics.inFlight.inc(labels);
    const endTimer = this.metrics.latency.startTimer(labels);
    let code = 500;
    try {
      code = await this.answer(route, req, res, url, arrived);
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

  /**
   * An unregistered path: a 404 refusal in the review the body is (a configuration
   * naming the wrong path is then refused, not admitted under `failurePolicy: Ignore`),
   * or a metav1 Status when the body is no review.
   */
  private async notFound(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const message = `no webhook is registered at ${path}`;
    let body: unknown;
    if (req.method === 'POST') {
      const read = await readBody(req, this.maxBodyBytes);
      if (read.ok) body = parseOrUndefined(read.text);
      else res.setHeader('connection', 'close');
    }
    const kind = isRecord(body) ? body.kind : undefined;
    const review: ReviewKind | undefined =
      kind === 'AdmissionReview' ? 'admission' : kind === 'ConversionReview' ? 'conversion' : undefined;
    const refusal = new Refusal(404, AdmissionReason.NotFound, message, recoveredFrom(body));
    if (review) this.refuse(res, review, path, refusal);
    else writeStatus(res, refusal);
  }

  /** Answers one request; returns the HTTP status written. */
  private async answer(
    route: Route,
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    arrived: number,
  ): Promise<number> {
    const review: ReviewKind = route.type === 'conversion' ? 'conversion' : 'admission';
    let text: string;
    let body: unknown;
    try {
      text = await this.receive(req);
      body = parseJson(text);
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      return this.refuse(res, review, url.pathname, err);
    }
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort(new Error('the caller hung up'));
    });
    const deadline = this.deadlineOf(url, arrived);
    try {
      switch (route.type) {
        case 'validating':
        case 'mutating': {
          const request = admissionRequestOf(body);
          // The handler gets `request`, its own to edit; the patch is computed against
          // a fresh parse of the same bytes, which no handler has seen.
          const pristine = (): AdmissionRequest => admissionRequestOf(JSON.parse(text));
          const response = await this.admit(route, url.pathname, request, pristine, deadline, abort);
          return writeJson(res, 200, {
            apiVersion: ADMISSION_API_VERSION,
            kind: 'AdmissionReview',
            response,
          });
        }
        case 'conversion': {
          const request = conversionRequestOf(body);
          const response = await this.convert(route.handler, url.pathname, request, deadline, abort);
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
      if (!(err instanceof Refusal)) throw err;
      return this.refuse(res, review, url.pathname, err);
    } finally {
      abort.abort(new Error('answered'));
    }
  }

  /** The body of a POST of JSON within the limit, or a {@link Refusal}. */
  private async receive(req: IncomingMessage): Promise<string> {
    if (req.method !== 'POST') {
      throw new Refusal(405, AdmissionReason.MethodNotAllowed, `${req.method} is not allowed: POST a review`);
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
    if (type !== 'application/json') {
      throw new Refusal(
        415,
        AdmissionReason.UnsupportedMediaType,
        `content-type ${type || '(none)'} is not application/json`,
      );
    }
    const limit = this.maxBodyBytes;
    const read = await readBody(req, limit);
    if (read.ok) return read.text;
    throw new Refusal(
      413,
      AdmissionReason.RequestEntityTooLarge,
      `the body exceeds the webhook server's limit of ${limit} bytes`,
      { uid: leadingUid(read.head), unread: !read.drained },
    );
  }

  /**
   * The apiserver's deadline, from its `timeout` parameter (the webhook's
   * `timeoutSeconds`, rounded up to a second, so never before the apiserver gives up),
   * counted from the request's arrival; and the sooner `handlerTimeoutMs` for the signal.
   */
  private deadlineOf(url: URL, arrived: number): Deadline {
    const sent = goDurationMs(url.searchParams.get('timeout'));
    const answerAt = arrived + (Number.isFinite(sent) ? sent : APISERVER_MAX_TIMEOUT_MS);
    const own = this.opts.handlerTimeoutMs;
    return { arrived, answerAt, abortAt: own === undefined ? answerAt : Math.min(answerAt, arrived + own) };
  }

  /** Writes `refusal` as the review `review` answers in (HTTP 200), logged; returns 200. */
  private refuse(res: ServerResponse, review: ReviewKind, path: string, refusal: Refusal): number {
    this.log.warn(
      { path, uid: refusal.uid, code: refusal.code, reason: refusal.reason, message: refusal.message },
      'webhook request refused',
    );
    // The rest of the body is still on the wire: this connection cannot carry another request.
    if (refusal.unread) res.setHeader('connection', 'close');
    if (review === 'conversion') {
      const response: ConversionResponse = {
        uid: refusal.uid,
        convertedObjects: [],
        result: { status: 'Failure', message: refusal.message },
      };
      return writeJson(res, 200, {
        apiVersion: refusal.apiVersion === CONVERSION_V1BETA1 ? CONVERSION_V1BETA1 : CONVERSION_API_VERSION,
        kind: 'ConversionReview',
        response,
      });
    }
    const response: AdmissionResponse = {
      uid: refusal.uid,
      allowed: false,
      status: { status: 'Failure', code: refusal.code, reason: refusal.reason, message: refusal.message },
    };
    return writeJson(res, 200, {
      // The apiserver reads a v1beta1 answer to a v1beta1 review without checking its uid:
      // answering in its version makes it apply the denial (with the message saying what to fix).
      apiVersion: refusal.apiVersion === ADMISSION_V1BETA1 ? ADMISSION_V1BETA1 : ADMISSION_API_VERSION,
      kind: 'AdmissionReview',
      response,
    });
  }

  private async admit(
    route: Route & { type: 'validating' | 'mutating' },
    path: string,
    request: AdmissionRequest,
    pristine: () => AdmissionRequest,
    deadline: Deadline,
    abort: AbortController,
  ): Promise<AdmissionResponse> {
    // Read before the handler runs: it owns `request` and may change anything in it.
    const uid = request.uid;
    const what = {
      path,
      uid,
      operation: request.operation,
      kind: request.kind?.kind,
      namespace: request.namespace,
      name: request.name,
    };
    const run = await this.run(deadline, abort, (signal) => route.handler(request, { signal }));
    let decision: MutationDecision;
    switch (run.kind) {
      case 'done':
        decision = run.value;
        break;
      case 'timedOut':
        this.log.warn(
          what,
          `admission handler did not answer within ${run.afterMs} ms, the apiserver's deadline; ` +
            "the apiserver has applied the webhook's failurePolicy",
        );
        return admissionResponse(
          { ...request, uid },
          deny(AdmissionReason.HandlerTimedOut, `the webhook did not decide within ${run.afterMs} ms`, {
            code: 504,
          }),
        );
      case 'failed':
        return this.handlerFailed(uid, run.error, what);
    }
    try {
      if (route.type === 'validating' && decision.type !== 'allow' && decision.type !== 'deny') {
        throw new Error(`a validating webhook cannot change the object (it answered ${decision.type})`);
      }
      return admissionResponse(decision.type === 'mutate' ? pristine() : { ...request, uid }, decision);
    } catch (err) {
      return this.handlerFailed(uid, err, what);
    }
  }

  private handlerFailed(uid: string, err: unknown, what: object): AdmissionResponse {
    this.metrics.panics.inc();
    const message = err instanceof Error ? err.message : String(err);
    this.log.error({ ...what, err }, 'admission handler failed; the request is denied');
    return {
      uid,
      allowed: false,
      status: {
        status: 'Failure',
        code: 500,
        reason: AdmissionReason.HandlerFailed,
        message: `the webhook failed: ${message}`,
      },
    };
  }

  private async convert(
    handler: ConversionHandler,
    path: string,
    request: ConversionRequest,
    deadline: Deadline,
    abort: AbortController,
  ): Promise<ConversionResponse> {
    const what = {
      path,
      uid: request.uid,
      desiredAPIVersion: request.desiredAPIVersion,
      objects: request.objects.length,
    };
    const run = await this.run(deadline, abort, (signal) => convertAll(request, handler, signal));
    switch (run.kind) {
      case 'done':
        if (run.value.result.status === 'Failure')
          this.log.warn({ ...what, message: run.value.result.message }, 'conversion failed');
        return run.value;
      case 'timedOut':
        this.log.warn(what, `conversion did not finish within ${run.afterMs} ms, the apiserver's deadline`);
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

  /**
   * Runs `fn` until it settles or the apiserver's deadline passes; the signal it gets
   * aborts at `deadline.abortAt` (the apiserver's deadline unless `handlerTimeoutMs`
   * is sooner), and the server answers for it only at `deadline.answerAt`.
   */
  private async run<T>(
    deadline: Deadline,
    abort: AbortController,
    fn: (signal: AbortSignal) => T | Promise<T>,
  ): Promise<Run<T>> {
    const now = this.clock.now();
    const timers: TimerHandle[] = [];
    if (deadline.abortAt < deadline.answerAt) {
      const ms = deadline.abortAt - deadline.arrived;
      timers.push(
        this.clock.setTimeout(
          () => abort.abort(new Error(`the handler timeout of ${ms} ms passed`)),
          deadline.abortAt - now,
        ),
      );
    }
    const afterMs = deadline.answerAt - deadline.arrived;
    const timedOut = new Promise<Run<T>>((resolve) => {
      timers.push(
        this.clock.setTimeout(() => {
          abort.abort(new Error(`the apiserver's deadline of ${afterMs} ms passed`));
          resolve({ kind: 'timedOut', afterMs });
        }, deadline.answerAt - now),
      );
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
      for (const timer of timers) this.clock.clearTimeout(timer);
    }
  }
}

function failedConversion(request: ConversionRequest, message: string): ConversionResponse {
  return { uid: request.uid, convertedObjects: [], result: { status: 'Failure', message } };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The uid and review version of a parsed body that is not the review expected, when it has them. */
function recoveredFrom(body: unknown): { uid?: string; apiVersion?: string } {
  if (!isRecord(body)) return {};
  const uid = isRecord(body.request) && typeof body.request.uid === 'string' ? body.request.uid : undefined;
  const apiVersion = typeof body.apiVersion === 'string' ? body.apiVersion : undefined;
  return { ...(uid === undefined ? {} : { uid }), ...(apiVersion === undefined ? {} : { apiVersion }) };
}

/** The uid at the head of an unparsed body, as the apiserver writes it; undefined otherwise. */
function leadingUid(text: string): string | undefined {
  return LEADING_UID.exec(text.slice(0, UID_HEAD_BYTES))?.[1];
}

function admissionRequestOf(body: unknown): AdmissionRequest {
  if (!isRecord(body) || body.kind !== 'AdmissionReview' || body.apiVersion !== ADMISSION_API_VERSION) {
    const got = isRecord(body) ? `${String(body.apiVersion)} ${String(body.kind)}` : typeof body;
    throw new Refusal(
      400,
      AdmissionReason.BadRequest,
      `expected an ${ADMISSION_API_VERSION} AdmissionReview, got ${got} (register the webhook with admissionReviewVersions: [v1])`,
      recoveredFrom(body),
    );
  }
  const request = body.request;
  if (!isRecord(request) || typeof request.uid !== 'string' || request.uid === '') {
    throw new Refusal(400, AdmissionReason.BadRequest, 'the AdmissionReview has no request with a uid');
  }
  return request as unknown as AdmissionRequest;
}

function conversionRequestOf(body: unknown): ConversionRequest {
  if (!isRecord(body) || body.kind !== 'ConversionReview' || body.apiVersion !== CONVERSION_API_VERSION) {
    const got = isRecord(body) ? `${String(body.apiVersion)} ${String(body.kind)}` : typeof body;
    throw new Refusal(
      400,
      AdmissionReason.BadRequest,
      `expected an ${CONVERSION_API_VERSION} ConversionReview, got ${got} (register the CRD with conversionReviewVersions: [v1])`,
      recoveredFrom(body),
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
    throw new Refusal(
      400,
      AdmissionReason.BadRequest,
      'the ConversionReview has no request with a uid, desiredAPIVersion and objects',
      recoveredFrom(body),
    );
  }
  return request as unknown as ConversionRequest;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Refusal(400, AdmissionReason.BadRequest, `the body is not JSON: ${(err as Error).message}`, {
      uid: leadingUid(text),
    });
  }
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A body within the limit, or the head of one over it (and whether it was read to its end). */
type Body =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly head: string; readonly drained: boolean };

/**
 * Reads the body. Past `limit` bytes (announced or received) it keeps only the head
 * (for the uid) and reads on, discarding, up to {@link OVERSIZED_DRAIN_BYTES} more, so
 * that the caller finishes writing and reads the refusal; a body announced or sent
 * larger than that is cut after its head.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Body> {
  const announced = Number(req.headers['content-length'] ?? 0);
  const readAtMost =
    announced > limit + OVERSIZED_DRAIN_BYTES ? UID_HEAD_BYTES : limit + OVERSIZED_DRAIN_BYTES;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let head: string | undefined;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (head === undefined) {
        chunks.push(chunk);
        if (size <= limit && size <= readAtMost) return;
        head = Buffer.concat(chunks, Math.min(size, UID_HEAD_BYTES)).toString('utf8');
        chunks.length = 0;
      }
      if (size > readAtMost) {
        req.off('data', onData);
        req.off('end', onEnd);
        req.pause();
        resolve({ ok: false, head, drained: false });
      }
    };
    const onEnd = (): void =>
      resolve(
        head === undefined
          ? { ok: true, text: Buffer.concat(chunks).toString('utf8') }
          : { ok: false, head, drained: true },
      );
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', reject);
  });
}

function writeJson(res: ServerResponse, code: number, body: unknown): number {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
  return code;
}

/** A refusal as a metav1 Status, for a request that is no review at all. */
function writeStatus(res: ServerResponse, refusal: Refusal): number {
  return writeJson(res, refusal.code, {
    apiVersion: 'v1',
    kind: 'Status',
    status: 'Failure',
    code: refusal.code,
    reason: refusal.reason,
    message: refusal.message,
  });
}

/**
 * A Go duration as the apiserver writes the `timeout` parameter (`10s`, `1m30s`,
 * `500ms`) in milliseconds; Infinity when absent or unreadable (the server then waits
 * {@link APISERVER_MAX_TIMEOUT_MS}).
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
