/**
 * The decider's HTTP API, on one port:
 *
 * - `GET /v1/verdict?addr=<address>[&host=..&path=..]`: the verdict as JSON
 *   (`{verdict, reason, list?}`), for the address given. For people and tools.
 * - Any method on `/v1/verdict/<original path>`: Envoy's ext_authz HTTP service, which
 *   appends the request's path to `path_prefix` (`filters.ts`) and forwards the headers
 *   `VERDICT_REQUEST_HEADERS`. The client address is read from them (`client-address.ts`).
 *   pass, pow and captcha answer 200 (allow) with `x-exoledge-verdict` and
 *   `x-exoledge-reason` (and `x-exoledge-list`), which ext_authz adds to the request for
 *   the challenge filter to act on (its `verdictHeader`); drop answers 403, which
 *   ext_authz sends to the client as it is.
 * - `GET /v1/challenge`: `{nonce, difficulty}` for the requesting client.
 *   `POST /v1/challenge` `{nonce, counter}`: the answer; 200 with the clearance cookie
 *   when it is right, 400 (malformed) or 403 (wrong, expired, used) with
 *   `{error, message}` otherwise, 503 when no clearance can be stored.
 * - `POST /v1/captcha` `{token}`: the captcha widget's answer, checked with the provider
 *   (`captcha.ts`); the same answers and cookie.
 * - `/healthz` (the process answers), `/readyz` (see `Decider.readiness`), `/metrics`.
 *
 * Before the decider is ready, verdicts answer 503: ext_authz counts a 5xx as a failure
 * of the service and applies `failurePolicy`, the same as if it could not reach it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { clearanceCookie, readClearanceCookie } from '../domain/decider/clearance.ts';
import { clientAddress, type IpAddress, readAddress } from '../domain/decider/client-address.ts';
import { type Decision, unreadableClient, Verdict } from '../domain/decider/verdict.ts';
import { VERDICT_HEADER, VERDICT_HEADER_PREFIX, VERDICT_PATH } from '../domain/edge-site/filters.ts';
import type { Decider, SolutionAnswer } from './decider.ts';

/** The challenge endpoints. */
export const CHALLENGE_PATH = '/v1/challenge';
/** Where the challenge page posts the captcha widget's answer. */
export const CAPTCHA_PATH = '/v1/captcha';
/** The reason of the verdict, beside `x-exoledge-verdict`. */
export const REASON_HEADER = `${VERDICT_HEADER_PREFIX}reason`;
/** The list that decided it, when one did. */
export const LIST_HEADER = `${VERDICT_HEADER_PREFIX}list`;
/**
 * Largest answer body accepted: a nonce and a counter are about 120 bytes, a captcha
 * token at most `MAX_CAPTCHA_TOKEN_LENGTH` characters.
 */
export const MAX_BODY_BYTES = 4096;

export interface HttpApiOptions {
  readonly trustedHops: number;
}

export function httpApi(decider: Decider, options: HttpApiOptions) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    handle(decider, options, req, res).catch((err: unknown) => {
      decider.log.error({ err, url: req.url }, 'request failed');
      if (!res.headersSent) send(res, 500, { error: 'Internal', message: 'the decider failed to answer' });
      else res.destroy();
    });
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

async function handle(
  decider: Decider,
  options: HttpApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://decider');
  const path = url.pathname;
  if (path.startsWith(`${VERDICT_PATH}/`)) return extAuthz(decider, options, req, res);
  if (path === VERDICT_PATH) return verdictApi(decider, req, res, url);
  if (path === CHALLENGE_PATH) return challenge(decider, options, req, res);
  if (path === CAPTCHA_PATH) return captcha(decider, options, req, res);
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'MethodNotAllowed' });
  switch (path) {
    case '/healthz':
      return text(res, 200, 'ok\n');
    case '/readyz': {
      const r = decider.readiness();
      const body = [
        ...r.lines,
        ...r.degraded.map((d) => `degraded: ${d}`),
        `readyz check ${r.ready ? 'passed' : 'failed'}`,
      ];
      return text(res, r.ready ? 200 : 503, `${body.join('\n')}\n`);
    }
    case '/metrics': {
      const body = await decider.registry.metrics();
      res.writeHead(200, { 'content-type': decider.registry.contentType });
      res.end(body);
      return;
    }
    default:
      return send(res, 404, { error: 'NotFound', message: `no ${path} here` });
  }
}

/** The client of a request forwarded by the gateway, or the decision for one that has none. */
function clientOf(options: HttpApiOptions, req: IncomingMessage) {
  return clientAddress(
    {
      externalAddress: header(req, 'x-envoy-external-address'),
      forwardedFor: header(req, 'x-forwarded-for'),
      peer: req.socket.remoteAddress,
    },
    options.trustedHops,
  );
}

async function decisionFor(
  decider: Decider,
  options: HttpApiOptions,
  req: IncomingMessage,
): Promise<Decision> {
  const client = clientOf(options, req);
  if (client.kind === 'unreadable') {
    decider.log.warn({ source: client.source }, client.message);
    const decision = unreadableClient();
    decider.metrics.verdicts.inc({ verdict: decision.verdict, reason: decision.reason });
    return decision;
  }
  return decider.verdict(client.address, readClearanceCookie(header(req, 'cookie')));
}

async function extAuthz(
  decider: Decider,
  options: HttpApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  req.resume();
  if (!decider.ready) return text(res, 503, 'the decider is not ready\n');
  const decision = await decisionFor(decider, options, req);
  if (decision.verdict === Verdict.Drop) {
    // Sent to the client as it is: no reason, no list name, nothing to learn from.
    return text(res, 403, 'Forbidden\n', { [VERDICT_HEADER]: decision.verdict });
  }
  res.writeHead(200, {
    [VERDICT_HEADER]: decision.verdict,
    [REASON_HEADER]: decision.reason,
    ...(decision.list === undefined ? {} : { [LIST_HEADER]: decision.list }),
    'content-length': '0',
  });
  res.end();
}

async function verdictApi(
  decider: Decider,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  req.resume();
  if (req.method !== 'GET') return send(res, 405, { error: 'MethodNotAllowed', message: 'GET only' });
  const addr = url.searchParams.get('addr');
  if (addr === null) return send(res, 400, { error: 'BadRequest', message: 'addr is required' });
  const address = readAddress(addr);
  if (typeof address === 'string') {
    return send(res, 400, { error: 'BadRequest', message: `addr ${JSON.stringify(addr)}: ${address}` });
  }
  if (!decider.ready) return send(res, 503, { error: 'NotReady', message: 'the decider is not ready' });
  const decision = await decider.verdict(address, readClearanceCookie(header(req, 'cookie')));
  return send(res, 200, decision);
}

async function challenge(
  decider: Decider,
  options: HttpApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const client = clientOf(options, req);
  if (req.method === 'GET') {
    req.resume();
    if (client.kind === 'unreadable') return send(res, 400, { error: 'BadRequest', message: client.message });
    const answer = await decider.nonce(client.address);
    if (!answer.ok) return send(res, answer.status, { error: 'Unavailable', message: answer.error });
    return send(res, 200, { nonce: answer.nonce, difficulty: answer.difficulty });
  }
  if (req.method !== 'POST') return send(res, 405, { error: 'MethodNotAllowed', message: 'GET or POST' });
  return answered(req, res, client, (address, fields) =>
    decider.solve(address, fields.nonce, fields.counter),
  );
}

/** `POST /v1/captcha` `{token}`: the captcha widget's answer, checked with the provider. */
async function captcha(
  decider: Decider,
  options: HttpApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== 'POST') {
    req.resume();
    return send(res, 405, { error: 'MethodNotAllowed', message: 'POST only' });
  }
  const client = clientOf(options, req);
  return answered(req, res, client, (address, fields) => decider.solveCaptcha(address, fields.token));
}

/**
 * An answer to a challenge (proof-of-work or captcha): the JSON body read, `solve` asked,
 * and the clearance cookie set when it says so.
 */
async function answered(
  req: IncomingMessage,
  res: ServerResponse,
  client: ReturnType<typeof clientOf>,
  solve: (address: IpAddress, fields: Record<string, unknown>) => Promise<SolutionAnswer>,
): Promise<void> {
  const body = await readBody(req);
  if (body === undefined) {
    return send(res, 413, { error: 'TooLarge', message: `a body of at most ${MAX_BODY_BYTES} bytes` });
  }
  if (client.kind === 'unreadable') return send(res, 400, { error: 'BadRequest', message: client.message });
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    return send(res, 400, { error: 'BadRequest', message: 'the body is not JSON' });
  }
  const fields = typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>) : {};
  const answer = await solve(client.address, fields);
  if (!answer.ok) return send(res, answer.status, { error: answer.error, message: answer.message });
  res.setHeader('set-cookie', clearanceCookie(answer.token, answer.maxAge));
  return send(res, 200, { cleared: true, maxAge: answer.maxAge });
}

/**
 * The body as text, or undefined past `MAX_BODY_BYTES`. A longer body is read to its end
 * and dropped, so that the answer can still be sent on the connection.
 */
function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const json = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(json)),
  });
  res.end(json);
}

function text(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  });
  res.end(body);
}
