/**
 * The decider's HTTP API, on one port:
 *
 * - `GET /v1/verdict?addr=<address>[&host=..&path=..]`: the verdict as JSON
 *   (`{verdict, reason, list?}`), for the address given. For people and tools.
 * - Any method on `/v1/verdict/<original path>`: Envoy's ext_authz HTTP service, which
 *   appends the request's path to `path_prefix` (`filters.ts`) and forwards the headers
 *   `VERDICT_REQUEST_HEADERS`. The client address is read from them (`client-address.ts`).
 *   pass answers 200 (allow) with `x-exoledge-verdict` and `x-exoledge-reason` (and
 *   `x-exoledge-list`), which ext_authz adds to the request for the origin's logs; drop
 *   answers 403; pow and captcha answer the challenge page (`challenge-page.ts`), and the
 *   answer to it (`/.exoledge/challenge`, `/.exoledge/captcha` on the site) a 303 with
 *   the clearance cookie: ext_authz sends every denial to the client as it is.
 * - `GET /v1/challenge`: `{nonce, difficulty}` for the requesting client (the same
 *   engine as the page, as JSON, for tools; not reachable through the gateway).
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
import {
  CAPTCHA_ANSWER_PATH,
  CHALLENGE_ANSWER_PATH,
  CHALLENGE_STATUS,
  CLEARED_STATUS,
  captchaPage,
  powPage,
  returnPath,
} from '../domain/decider/challenge-page.ts';
import { clearanceCookie, readClearanceCookie } from '../domain/decider/clearance.ts';
import {
  type ClientAddress,
  clientAddress,
  type IpAddress,
  readAddress,
} from '../domain/decider/client-address.ts';
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
  /** The header named by `EXOLEDGE_CLIENT_ADDRESS_HEADER`, lower case; undefined: none. */
  readonly clientAddressHeader?: string | undefined;
}

export function httpApi(decider: Decider, options: HttpApiOptions) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const failed = (err: unknown): void => {
      decider.log.error({ err, url: req.url }, 'request failed');
      if (!res.headersSent) send(res, 500, { error: 'Internal', message: 'the decider failed to answer' });
      else res.destroy();
    };
    try {
      handle(decider, options, req, res)?.catch(failed);
    } catch (err) {
      failed(err);
    }
  };
}

/** Where ext_authz requests arrive: `path_prefix` and the client's path, which starts with `/`. */
const EXT_AUTHZ_PREFIX = `${VERDICT_PATH}/`;

/**
 * Routes a request. ext_authz requests, nearly all of the traffic, are recognised on the
 * raw path, before any URL parsing: whatever follows `/v1/verdict/` is the client's path,
 * never resolved, so no path of a client (`/v1/verdict/../../metrics`) reaches another
 * endpoint whose 200 ext_authz would read as "allow". They are answered without a
 * promise unless Valkey is asked (`Decider.verdict`).
 */
function handle(
  decider: Decider,
  options: HttpApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> | undefined {
  const raw = req.url ?? '/';
  if (raw.startsWith(EXT_AUTHZ_PREFIX)) return extAuthz(decider, options, req, res);
  return other(decider, options, req, res, new URL(raw, 'http://decider'));
}

async function other(
  decider: Decider,
  options: HttpApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const path = url.pathname;
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
function clientOf(
  options: HttpApiOptions,
  req: IncomingMessage,
  read = verdictHeaders(req, options.clientAddressHeader),
): ClientAddress {
  return clientAddress(
    { forwardedFor: read.forwardedFor, named: read.named, peer: req.socket.remoteAddress },
    options.trustedHops,
  );
}

interface VerdictHeaders {
  forwardedFor?: string;
  named?: string;
  cookie?: string;
}

const FORWARDED_FOR = 'x-forwarded-for';
const COOKIE = 'cookie';

/**
 * The headers a verdict reads, found in `req.rawHeaders` rather than through
 * `req.headers`, which Node builds on first use with every header of the request (a
 * measurable part of a verdict). Repeated headers are joined as `req.headers` joins
 * them: `, ` and, for cookies, `; `. `named`: the operator's client address header.
 */
function verdictHeaders(req: IncomingMessage, named: string | undefined): VerdictHeaders {
  const raw = req.rawHeaders;
  const out: VerdictHeaders = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    // The length first: most headers are none of these, and this costs no string.
    if (named !== undefined && name.length === named.length && name.toLowerCase() === named) {
      out.named = joined(out.named, raw[i + 1]!, ', ');
    } else if (name.length === FORWARDED_FOR.length && name.toLowerCase() === FORWARDED_FOR) {
      out.forwardedFor = joined(out.forwardedFor, raw[i + 1]!, ', ');
    } else if (name.length === COOKIE.length && name.toLowerCase() === COOKIE) {
      out.cookie = joined(out.cookie, raw[i + 1]!, '; ');
    }
  }
  return out;
}

function joined(previous: string | undefined, value: string, separator: string): string {
  return previous === undefined ? value : `${previous}${separator}${value}`;
}

function extAuthz(
  decider: Decider,
  options: HttpApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> | undefined {
  // No req.resume(): Envoy sends no body (no `with_request_body`), and Node drains one
  // left unread when the answer ends; resuming here did that work twice.
  if (!decider.ready) {
    text(res, 503, 'the decider is not ready\n');
    return undefined;
  }
  // The client's path and query, as Envoy appended them to the prefix.
  const target = (req.url ?? '/').slice(VERDICT_PATH.length);
  const read = verdictHeaders(req, options.clientAddressHeader);
  const client = clientOf(options, req, read);
  if (client.kind === 'unreadable') {
    decider.log.warn({ source: client.source }, client.message);
    const decision = unreadableClient();
    decider.metrics.countVerdict(decision.verdict, decision.reason);
    answerExtAuthz(res, decision);
    return undefined;
  }
  const path = pathOf(target);
  if (path === CHALLENGE_ANSWER_PATH || path === CAPTCHA_ANSWER_PATH) {
    return answerInCheck(decider, req, res, client.address, path, target);
  }
  const decision = decider.verdict(client.address, readClearanceCookie(read.cookie));
  if (decision instanceof Promise)
    return decision.then((d) => respond(decider, res, client.address, d, target));
  return respond(decider, res, client.address, decision, target);
}

function pathOf(target: string): string {
  const q = target.indexOf('?');
  return q < 0 ? target : target.slice(0, q);
}

/** Pass and drop at once; a challenge verdict as its page (which needs a nonce: a promise). */
function respond(
  decider: Decider,
  res: ServerResponse,
  address: IpAddress,
  decision: Decision,
  target: string,
): Promise<void> | undefined {
  if (decision.verdict === Verdict.Pow) {
    // The common case answered at once, without a promise: the key is known.
    const nonce = decider.nonceNow(address, decision.extraBits ?? 0);
    if (nonce?.ok) {
      const { head, body } = cachedPowPage(nonce.nonce, nonce.difficulty, target, decision.reason);
      res.writeHead(CHALLENGE_STATUS, head);
      res.end(body);
      return undefined;
    }
  }
  if (decision.verdict === Verdict.Pow || decision.verdict === Verdict.Captcha) {
    return challengePage(decider, res, address, decision, target);
  }
  answerExtAuthz(res, decision);
  return undefined;
}

/**
 * The challenge page, as ext_authz's denied response. A site whose captcha is gone from
 * its configuration since the verdict gets the proof-of-work instead. No signing key
 * (no Secret, and Valkey never answered): 503, which ext_authz treats as the decider
 * failing (`failurePolicy`).
 */
async function challengePage(
  decider: Decider,
  res: ServerResponse,
  address: IpAddress,
  decision: Decision,
  target: string,
  message?: string,
): Promise<void> {
  const headers = challengeHeaders(decision);
  const captcha = decider.config?.captcha;
  if (decision.verdict === Verdict.Captcha && captcha !== undefined) {
    const body = captchaPage({ ...captcha, to: target, ...(message ? { message } : {}) });
    return page(res, CHALLENGE_STATUS, body, headers);
  }
  const nonce = await decider.nonce(address, decision.extraBits ?? 0);
  if (!nonce.ok) return text(res, nonce.status, `${nonce.error}\n`);
  const body = powPage({
    nonce: nonce.nonce,
    difficulty: nonce.difficulty,
    to: target,
    ...(message ? { message } : {}),
  });
  return page(res, CHALLENGE_STATUS, body, headers);
}

/**
 * The page for a nonce and a target, with its headers as the flat array `writeHead`
 * takes: a client asking the same page again within the nonce's reuse gets the very same
 * text (its nonce is reused, `Decider.nonceNow`), built once. At most
 * `MAX_CACHED_PAGES`, then the cache starts over.
 */
function cachedPowPage(
  nonce: string,
  difficulty: number,
  target: string,
  reason: string,
): { readonly head: string[]; readonly body: string } {
  const key = `${nonce}\n${target}\n${reason}`;
  let entry = pageCache.get(key);
  if (entry === undefined) {
    const body = powPage({ nonce, difficulty, to: target });
    entry = {
      body,
      head: [
        'content-type',
        'text/html; charset=utf-8',
        'cache-control',
        'no-store',
        'content-length',
        String(Buffer.byteLength(body)),
        VERDICT_HEADER,
        Verdict.Pow,
        REASON_HEADER,
        reason,
      ],
    };
    if (pageCache.size >= MAX_CACHED_PAGES) pageCache.clear();
    pageCache.set(key, entry);
  }
  return entry;
}

const MAX_CACHED_PAGES = 2_000;
const pageCache = new Map<string, { readonly head: string[]; readonly body: string }>();

function challengeHeaders(decision: Decision): Record<string, string> {
  return { [VERDICT_HEADER]: decision.verdict, [REASON_HEADER]: decision.reason };
}

/**
 * An answer to the page, in the check of the request that carries it: right, a 303 to
 * where the visitor was going with the clearance cookie; wrong, the page again with
 * why; 503 (no key, provider down) as the decider failing.
 */
async function answerInCheck(
  decider: Decider,
  req: IncomingMessage,
  res: ServerResponse,
  address: IpAddress,
  path: string,
  target: string,
): Promise<void> {
  const query = new URLSearchParams(target.slice(path.length + 1));
  const to = returnPath(query.get('to'));
  if (req.method !== 'GET') return text(res, 405, 'answer with GET\n');
  let answer: SolutionAnswer;
  if (path === CHALLENGE_ANSWER_PATH) {
    const counterText = query.get('counter') ?? '';
    const counter = /^[0-9]{1,16}$/.test(counterText) ? Number(counterText) : counterText;
    answer = await decider.solve(address, query.get('nonce'), counter);
  } else {
    answer = await decider.solveCaptcha(address, query.get('token'));
  }
  if (answer.ok) {
    res.writeHead(CLEARED_STATUS, {
      location: locationOf(to),
      'set-cookie': clearanceCookie(answer.token, answer.maxAge),
      'cache-control': 'no-store',
      'content-length': '0',
    });
    res.end();
    return;
  }
  if (answer.status === 503) return text(res, 503, `${answer.message}\n`);
  const verdict = path === CHALLENGE_ANSWER_PATH ? Verdict.Pow : Verdict.Captcha;
  return challengePage(
    decider,
    res,
    address,
    { verdict, reason: 'PresumedListed' },
    to,
    `The answer was refused: ${answer.message}.`,
  );
}

/** A path as a header value: whatever is not visible ASCII percent-encoded. */
function locationOf(path: string): string {
  return path.replace(/[^\x21-\x7e]/g, (c) => encodeURIComponent(c));
}

function page(res: ServerResponse, status: number, body: string, headers: Record<string, string>): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  });
  res.end(body);
}

/** Drop: 403 with nothing but the verdict. Otherwise 200 (allow) with the verdict, its reason and list. */
function answerExtAuthz(res: ServerResponse, decision: Decision): void {
  if (decision.verdict === Verdict.Drop) {
    // Sent to the client as it is: no reason, no list name, nothing to learn from.
    res.writeHead(403, DROP_HEADERS);
    // latin1 (the body is ASCII): written with the head in one latin1 string, not as UTF-8.
    res.end(DROP_BODY, 'latin1');
    return;
  }
  res.writeHead(200, allowHeaders(decision));
  res.end();
}

const DROP_BODY = 'Forbidden\n';
const DROP_HEADERS = [
  'content-type',
  'text/plain; charset=utf-8',
  'cache-control',
  'no-store',
  'content-length',
  String(Buffer.byteLength(DROP_BODY)),
  VERDICT_HEADER,
  Verdict.Drop,
];

/** A bound on the headers cached, far above what a cluster's lists make. */
const MAX_CACHED_HEADERS = 1024;
let cachedHeaders = 0;

/**
 * The headers of an allow answer, as the flat `[name, value, ...]` array `writeHead`
 * takes, one per verdict, reason and list: a few dozen at most (the lists are the
 * cluster's BlocklistSources), built once instead of on every request. Keyed by nested
 * maps rather than one joined string, so finding them builds no string either.
 */
const allowHeadersCache = new Map<string, Map<string, Map<string, string[]>>>();

function allowHeaders(decision: Decision): string[] {
  let byReason = allowHeadersCache.get(decision.verdict);
  if (byReason === undefined) {
    byReason = new Map();
    allowHeadersCache.set(decision.verdict, byReason);
  }
  let byList = byReason.get(decision.reason);
  if (byList === undefined) {
    byList = new Map();
    byReason.set(decision.reason, byList);
  }
  const list = decision.list ?? '';
  let headers = byList.get(list);
  if (headers === undefined) {
    headers = [VERDICT_HEADER, decision.verdict, REASON_HEADER, decision.reason];
    if (decision.list !== undefined) headers.push(LIST_HEADER, decision.list);
    headers.push('content-length', '0');
    if (cachedHeaders < MAX_CACHED_HEADERS) {
      byList.set(list, headers);
      cachedHeaders++;
    }
  }
  return headers;
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
  const decision = await decider.verdict(address, readClearanceCookie(verdictHeaders(req, undefined).cookie));
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
