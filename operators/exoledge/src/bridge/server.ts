/**
 * The console bridge's HTTP service (node:http). It reads the request, asks the pure
 * decisions of domain/bridge what to answer, performs the two reads they need (the
 * console's directory, the apiserver's dry-run) and writes the answer:
 *
 * - `GET /domains/manifest?host=H`: the EdgeSite of H's record, dry-run validated;
 * - `POST /domains/security?host=H` with `{switch, enabled}`: the same manifest with that
 *   switch set, dry-run validated, written nowhere (the console keeps its own state);
 *   refused with 409 on a shared gateway;
 * - `GET /healthz`: the process answers.
 *
 * A manifest is YAML, or JSON when the request's Accept names application/json before
 * application/yaml. A refusal is always JSON, `{reason, message}`, with the status its
 * reason has (`STATUS_OF`). No manifest is ever sent without the apiserver's acceptance.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { stringify } from 'yaml';
import {
  type Answer,
  answerDryRun,
  BridgeReason,
  type DomainDirectory,
  type DryRun,
  type EdgeSiteManifest,
  parseHost,
  parseToggle,
  planManifest,
  type Refusal,
  refusal,
  STATUS_OF,
  type ToggleRequest,
} from '../domain/bridge/index.ts';

export const MANIFEST_PATH = '/domains/manifest';
export const SECURITY_PATH = '/domains/security';
export const HEALTH_PATH = '/healthz';

/** A toggle is a few dozen bytes; anything much larger is not one. */
export const MAX_BODY_BYTES = 16 * 1024;

export interface BridgeOptions {
  readonly directory: DomainDirectory;
  readonly dryRun: DryRun;
  readonly log: Logger;
  /** The address to listen on; default every interface. */
  readonly host?: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
}

export interface Bridge {
  /** `http://host:port`, as bound. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startBridge(opts: BridgeOptions): Promise<Bridge> {
  const server = createServer((req, res) => {
    handle(req, opts)
      .then((answer) => write(res, req, answer))
      .catch((err: unknown) => {
        opts.log.error({ err, method: req.method, url: req.url }, 'bridge request failed');
        write(res, req, refusal(BridgeReason.InternalError, 'the bridge failed to answer; see its log'));
      });
  });
  // A console that stops reading must not hold a socket for ever.
  server.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const shown = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${shown}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** What to answer `req`: the bridge's Answer, or one of the plumbing's own (health, wrong method). */
type Reply = Answer | { readonly kind: 'Healthy' } | { readonly kind: 'WrongMethod'; readonly allow: string };

async function handle(req: IncomingMessage, opts: BridgeOptions): Promise<Reply> {
  const url = new URL(req.url ?? '/', 'http://bridge.invalid');
  const method = req.method ?? 'GET';
  switch (url.pathname) {
    case HEALTH_PATH:
      return method === 'GET' ? { kind: 'Healthy' } : { kind: 'WrongMethod', allow: 'GET' };
    case MANIFEST_PATH:
      if (method !== 'GET') return { kind: 'WrongMethod', allow: 'GET' };
      return manifest(url, undefined, opts);
    case SECURITY_PATH: {
      if (method !== 'POST') return { kind: 'WrongMethod', allow: 'POST' };
      const body = await readBody(req);
      if (body === undefined) {
        return refusal(BridgeReason.BodyTooLarge, `a toggle is at most ${MAX_BODY_BYTES} bytes of JSON`);
      }
      const parsed = parseToggle(body);
      if (parsed.kind === 'BadToggle') return refusal(BridgeReason.BadToggle, parsed.message);
      return manifest(url, parsed.toggle, opts);
    }
    default:
      return refusal(
        BridgeReason.NoSuchEndpoint,
        `no such endpoint: ${url.pathname}; the bridge serves GET ${MANIFEST_PATH} and POST ${SECURITY_PATH}`,
      );
  }
}

/** Host, directory, plan, dry-run, answer: the two reads between the pure steps. */
async function manifest(url: URL, toggle: ToggleRequest | undefined, opts: BridgeOptions): Promise<Answer> {
  const parsed = parseHost(url.searchParams.getAll('host'));
  if (parsed.kind === 'BadHost') return refusal(BridgeReason.BadHost, parsed.message);
  const plan = planManifest(parsed.host, await opts.directory.lookup(parsed.host), toggle);
  if (plan.kind === 'Refusal') return plan;
  const answer = answerDryRun(plan.manifest, await opts.dryRun(plan.manifest));
  if (answer.kind === 'Refusal' && answer.reason === BridgeReason.DryRunFailed) {
    opts.log.warn({ host: parsed.host, message: answer.message }, 'dry-run without a verdict');
  }
  return answer;
}

/**
 * The body as text, or `undefined` past MAX_BODY_BYTES. The rest of a large body is read
 * and dropped rather than left unread: stopping the stream would tear the socket down
 * before the 413 reaches the client. `requestTimeout` bounds a body that never ends.
 */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  return size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString('utf8');
}

function write(res: ServerResponse, req: IncomingMessage, reply: Reply): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  switch (reply.kind) {
    case 'Healthy':
      send(res, 200, 'text/plain; charset=utf-8', 'ok\n');
      return;
    case 'WrongMethod':
      res.setHeader('allow', reply.allow);
      sendRefusal(
        res,
        refusal(BridgeReason.MethodNotAllowed, `${req.method} is not served here; use ${reply.allow}`),
      );
      return;
    case 'Manifest':
      sendManifest(res, req, reply.manifest);
      return;
    case 'Refusal':
      sendRefusal(res, reply);
      return;
    default:
      reply satisfies never;
  }
}

function sendManifest(res: ServerResponse, req: IncomingMessage, manifest: EdgeSiteManifest): void {
  // The manifest follows the console's record, which changes: never cache it.
  res.setHeader('cache-control', 'no-store');
  if (wantsJson(req.headers.accept)) {
    send(res, 200, 'application/json', `${JSON.stringify(manifest, null, 2)}\n`);
  } else {
    // No aliases: a reader of Git must see every field where it applies. Quoted for YAML
    // 1.1 as well: kubectl, Argo CD and Flux read YAML with Go parsers of 1.1, where a
    // plain `on`, `no` or `1_000` is not a string; quoted, it is one in 1.1 and 1.2 alike.
    send(res, 200, 'application/yaml', stringify(manifest, { aliasDuplicateObjects: false, version: '1.1' }));
  }
}

function sendRefusal(res: ServerResponse, r: Refusal): void {
  send(
    res,
    STATUS_OF[r.reason],
    'application/json',
    `${JSON.stringify({ reason: r.reason, message: r.message })}\n`,
  );
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** JSON when Accept names application/json, unless it names application/yaml first. */
function wantsJson(accept: string | undefined): boolean {
  const a = (accept ?? '').toLowerCase();
  const json = a.indexOf('application/json');
  const yaml = a.indexOf('application/yaml');
  return json >= 0 && (yaml < 0 || json < yaml);
}
