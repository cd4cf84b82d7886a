/**
 * A contract-faithful STAND-IN for terdut-server — not the real server, which is not
 * public. The operator's tests and local runs talk to this over real HTTP (node:http, no
 * framework) instead. It follows the REST contract the operator relies on
 * (/work/shared/notes/terdut-server-contract.md §1, §2.5, §3 and the DESIGN §5–§6): users
 * and API keys, single-shot bootstrap, teams, escalation policies, dead man's switches and
 * integrations, in memory. Where the contract is silent it makes documented assumptions
 * (docs/terdut.md, "The terdut-server stand-in").
 *
 * Beyond the contract it has what tests need and a real server would not: fault knobs
 * (fail, malformed body, drop after commit, latency, stop/start on the same port), a
 * request log, a state snapshot without secrets, the list of every secret it issued, and
 * an unauthenticated `/_standin/` HTTP control surface for a stand-in run as a process.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { CONTROL_PREFIX, type ControlDeps, handleControl } from './control.ts';
import { MSG } from './errors.ts';
import { DEFAULT_FAIL_STATUS, type FaultFilter, type FaultKind, Faults } from './faults.ts';
import { BodyTooLarge, readBody, send, sendRaw, sendText } from './http-io.ts';
import type { StandInSnapshot } from './model.ts';
import { type RecordedRequest, RequestLog } from './request-log.ts';
import { dispatch, type Reply } from './routes.ts';
import { Store } from './store.ts';
import { DEFAULT_SERVER_VERSION, type ServerVersion } from './version.ts';

export type { FaultFilter, FaultKind } from './faults.ts';
export type { StandInSnapshot } from './model.ts';
export type { RecordedRequest } from './request-log.ts';
export { DEFAULT_SERVER_VERSION, SERVER_VERSIONS, type ServerVersion } from './version.ts';

export const DEFAULT_HOST = '127.0.0.1';
/** Every log line starts with this, so nobody mistakes the stand-in for the real server. */
export const LOG_PREFIX = 'terdut-server stand-in';
/** What the malformed knob answers: JSON cut short, as from a server dying mid-write. */
export const MALFORMED_BODY = '{"id":';

export interface StandInOptions {
  /** 0 or absent: any free port. */
  readonly port?: number;
  readonly host?: string;
  /** The base of integration URLs (`<publicUrl>/ingest/<id>`); defaults to `url`. */
  readonly publicUrl?: string;
  /** Receives one line per event; silent when absent. Never given a secret. */
  readonly log?: (line: string) => void;
  /** The release to play (version.ts); the DESIGN's default image, v0.9.3, when absent. */
  readonly version?: ServerVersion;
  /** Team routes refuse non-admin keys with 403 (see routes.ts `teamsAdminOnly`). */
  readonly teamsAdminOnly?: boolean;
}

export interface FailOptions extends FaultFilter {
  /** The status to answer; 500 when absent. */
  readonly status?: number;
}

export interface StandIn {
  /** `http://host:port`, the same across stop()/start(). */
  readonly url: string;
  /** The release it plays. */
  readonly version: ServerVersion;
  /** Every request so far (including /healthz, excluding /_standin/), oldest first; a copy. */
  readonly requests: readonly RecordedRequest[];
  /** Closes for good. */
  close(): Promise<void>;
  /** Closes the listener and destroys open sockets: connections are refused, state is kept. */
  stop(): Promise<void>;
  /** Listens again on the same port, with the same state. */
  start(): Promise<void>;
  /** The next `n` matching requests get `status` and `{"error":"injected failure"}`, without acting. */
  failNext(n: number, opts?: FailOptions): void;
  /** The next `n` matching requests get a 200 whose body is not JSON, without acting. */
  malformedNext(n: number, opts?: FaultFilter): void;
  /** The next `n` matching requests are carried out, then the socket is destroyed unanswered. */
  dropAfterCommitNext(n: number, opts?: FaultFilter): void;
  /** Every request but /healthz waits `ms` before it is handled; 0 clears. */
  setLatency(ms: number): void;
  /** Disarms every knob and clears the latency. */
  clearFaults(): void;
  clearRequests(): void;
  /** Deep copies of the state; API keys and integrations without their secrets. */
  snapshot(): StandInSnapshot;
  /** Every API key and integration key ever issued, deleted or not. */
  issuedSecrets(): readonly string[];
  /** Whose key `secret` is (a username), if it is a live key: for tests, on every version. */
  keyOwner(secret: string): string | undefined;
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function describeFilter(f: FaultFilter): string {
  return `${f.method ?? '*'} ${f.path ? f.path.source : '*'}`;
}

export async function startStandIn(opts: StandInOptions = {}): Promise<StandIn> {
  const host = opts.host ?? DEFAULT_HOST;
  const version = opts.version ?? DEFAULT_SERVER_VERSION;
  const log = opts.log ?? (() => {});
  const store = new Store();
  const faults = new Faults();
  const requestLog = new RequestLog();
  const controlDeps: ControlDeps = {
    faults,
    requests: () => requestLog.list(),
    clearRequests: () => requestLog.clear(),
    snapshot: () => store.snapshot(),
  };
  let publicUrl = '';
  let closed = false;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = Date.now();
    const method = req.method ?? 'GET';
    // Split by hand: URL parsing would read a path like `//api/teams` as a host name.
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    const query = q < 0 ? '' : target.slice(q + 1);

    if (path.startsWith(CONTROL_PREFIX)) {
      let reply: Reply;
      try {
        reply = handleControl(controlDeps, method, path, await readBody(req));
      } catch (e) {
        if (!(e instanceof BodyTooLarge)) throw e;
        reply = { status: 413, body: { error: MSG.bodyTooLarge }, headers: { connection: 'close' } };
      }
      send(res, reply.status, reply.body, reply.headers);
      return;
    }

    // Taken on arrival, so concurrent requests consume knobs in the order they came in.
    const fault = faults.take(method, path);
    const record = (status: number, userId?: number): void => {
      requestLog.record({
        method,
        path,
        query,
        status,
        ...(userId !== undefined ? { userId } : {}),
        at,
        ...(fault ? { fault: fault.kind } : {}),
      });
      log(`${LOG_PREFIX}: ${method} ${path} ${status}${fault ? ` (injected: ${fault.kind})` : ''}`);
    };

    let body: string;
    try {
      body = await readBody(req);
    } catch (e) {
      if (!(e instanceof BodyTooLarge)) {
        record(0); // the client went away mid-body
        return;
      }
      record(413);
      send(res, 413, { error: MSG.bodyTooLarge }, { connection: 'close' });
      return;
    }
    const delay = faults.latencyFor(path);
    if (delay > 0) await sleep(delay);
    // Cut while waiting (client gone, or stop()): a request never handled has no effect.
    if (req.socket.destroyed) {
      record(0);
      return;
    }

    if (fault?.kind === 'fail') {
      record(fault.status);
      send(res, fault.status, { error: MSG.injectedFailure });
      return;
    }
    if (fault?.kind === 'malformed') {
      record(200);
      sendRaw(res, 200, MALFORMED_BODY);
      return;
    }
    const { reply, userId } = dispatch(store, {
      method,
      path,
      query: new URLSearchParams(query),
      authorization: req.headers.authorization,
      body,
      publicUrl,
      version,
      ...(opts.teamsAdminOnly ? { teamsAdminOnly: true } : {}),
    });
    record(reply.status, userId);
    if (fault?.kind === 'dropAfterCommit') {
      // Committed above; the client never learns the outcome.
      req.socket.destroy();
      return;
    }
    if (reply.text !== undefined) sendText(res, reply.status, reply.text);
    else send(res, reply.status, reply.body, reply.headers);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log(`${LOG_PREFIX}: internal error: ${err instanceof Error ? err.message : String(err)}`);
      if (!res.headersSent && !req.socket.destroyed) send(res, 500, { error: MSG.internal });
      else req.socket.destroy();
    });
  });

  function listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  }

  async function stop(): Promise<void> {
    if (!server.listening) return;
    await new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      // close() alone waits for keep-alive connections; a server that went down has none.
      server.closeAllConnections();
    });
  }

  await listen(opts.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  const url = `http://${urlHost(host)}:${port}`;
  publicUrl = (opts.publicUrl ?? url).replace(/\/+$/, '');
  log(`${LOG_PREFIX} listening on ${url} (as terdut-server v${version})`);

  function arm(kind: FaultKind, n: number, filter: FaultFilter, status?: number): void {
    const f: FaultFilter = {
      ...(filter.method !== undefined ? { method: filter.method } : {}),
      ...(filter.path !== undefined ? { path: filter.path } : {}),
    };
    faults.arm(kind, n, f, status ?? DEFAULT_FAIL_STATUS);
    log(`${LOG_PREFIX}: armed ${kind} x${n} for ${describeFilter(f)}`);
  }

  return {
    url,
    version,
    get requests() {
      return requestLog.list();
    },
    async close() {
      closed = true;
      await stop();
      log(`${LOG_PREFIX} closed`);
    },
    async stop() {
      await stop();
      log(`${LOG_PREFIX} stopped: connections refused, state kept`);
    },
    async start() {
      if (closed) throw new Error(`${LOG_PREFIX} is closed; start a new one`);
      if (server.listening) return;
      await listen(port);
      log(`${LOG_PREFIX} listening again on ${url}`);
    },
    failNext: (n, o = {}) => arm('fail', n, o, o.status),
    malformedNext: (n, o = {}) => arm('malformed', n, o),
    dropAfterCommitNext: (n, o = {}) => arm('dropAfterCommit', n, o),
    setLatency(ms) {
      faults.setLatency(ms);
      log(`${LOG_PREFIX}: latency ${ms} ms`);
    },
    clearFaults: () => faults.clear(),
    clearRequests: () => requestLog.clear(),
    snapshot: () => store.snapshot(),
    issuedSecrets: () => store.issuedSecrets(),
    keyOwner: (secret) => store.authenticateQuietly(secret)?.username,
  };
}
