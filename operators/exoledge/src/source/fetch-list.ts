/**
 * Reading a blocklist over HTTP or HTTPS: one GET, parsed as it arrives (nobody holds a
 * 40 MB list in memory to read it), with the limits an operator needs against a
 * provider that misbehaves:
 *
 * - only a 200 is a list; a 304 answers a conditional GET (If-None-Match with the last
 *   ETag, If-Modified-Since with the last Last-Modified), so that an unchanged list costs
 *   one small answer and no parsing; any other status is a failed read, body unread;
 * - a size limit, counted on the decoded body (a small gzip can inflate enormously),
 *   checked against Content-Length before reading when there is one;
 * - one time limit for the whole read, redirects and body included;
 * - redirects followed up to 5 times, to http or https only.
 *
 * Failures are values with a reason (`Unreachable`, `Timeout`, `HttpStatus`, `TooLarge`,
 * `BadRedirect`, `UnsupportedEncoding`, `CorruptBody`), never exceptions: a failed read is an expected state of the world,
 * which the reconciler reports and retries. Only the caller's own abort (shutdown) throws.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { BlocklistParser, type ParseResult, type ShortestPrefix } from '../domain/blocklist/index.ts';
import type { Validators } from '../domain/blocklist-source/refresh.ts';

export interface FetchListOptions {
  /** Validators of the list we hold: the GET becomes conditional. */
  readonly validators?: Validators;
  /** The largest body accepted, decoded. */
  readonly maxBytes: number;
  /** The whole read, redirects and body included. */
  readonly timeoutMs: number;
  /** The caller's abort (shutdown): rejects with its reason. */
  readonly signal?: AbortSignal;
  /** CA certificates (PEM) to trust for https besides the system's: a private CA. */
  readonly ca?: string;
  readonly maxRedirects?: number;
  /** Prefixes shorter than this are refused by the parser (`ParseResult.tooShort`); absent: none. */
  readonly shortestPrefix?: ShortestPrefix;
}

export type FetchFailureReason =
  | 'Unreachable'
  | 'Timeout'
  | 'HttpStatus'
  | 'TooLarge'
  | 'BadRedirect'
  | 'UnsupportedEncoding'
  | 'CorruptBody';

export type FetchOutcome =
  | {
      readonly kind: 'Read';
      readonly parse: ParseResult;
      readonly validators: Validators;
      /** Decoded body size. */
      readonly bytes: number;
    }
  | { readonly kind: 'NotModified' }
  | { readonly kind: 'Failed'; readonly reason: FetchFailureReason; readonly message: string };

export const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = 'exoledge-operator (+https://github.com/exoledge)';

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(bytes < 1048576 ? 2 : 0)} MiB`;
}

/** A failed read, as a value. */
class ReadFailed extends Error {
  readonly reason: FetchFailureReason;
  constructor(reason: FetchFailureReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

function get(url: URL, headers: Record<string, string>, signal: AbortSignal, ca: string | undefined) {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const options = { method: 'GET', headers, signal };
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, ca ? { ...options, ca } : options, resolve)
        : httpRequest(url, options, resolve);
    req.on('error', reject);
    req.end();
  });
}

/**
 * Errors raised by a decoder itself (a truncated or corrupt compressed body), as opposed
 * to the connection's errors that the pipeline passes on to it: the first are the
 * provider's file (`CorruptBody`), the second the network (`Unreachable`).
 */
const decoderErrors = new WeakSet<object>();

function decoded(res: IncomingMessage, href: string): Readable {
  const encoding = (res.headers['content-encoding'] ?? 'identity').toLowerCase().trim();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : undefined;
  if (encoding === 'identity') return res;
  if (!decoder) {
    res.destroy();
    throw new ReadFailed(
      'UnsupportedEncoding',
      `GET ${href} answered with Content-Encoding ${encoding}, which was not asked for (gzip, deflate or br)`,
    );
  }
  // Registered before the pipeline's own listener: at this point a connection error has
  // already marked the response `errored`, a decoding error has not.
  decoder.on('error', (err) => {
    if (!res.errored) decoderErrors.add(err);
  });
  return pipeline(res, decoder, () => {});
}

/** Reads the list at `url`. Resolves with the outcome; rejects only if `opts.signal` aborts. */
export async function fetchList(url: string, opts: FetchListOptions): Promise<FetchOutcome> {
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([deadline, opts.signal]) : deadline;
  const headers: Record<string, string> = {
    accept: 'text/plain, */*;q=0.5',
    'accept-encoding': 'gzip, deflate, br',
    'user-agent': USER_AGENT,
  };
  if (opts.validators?.etag !== undefined) headers['if-none-match'] = opts.validators.etag;
  if (opts.validators?.lastModified !== undefined)
    headers['if-modified-since'] = opts.validators.lastModified;
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  let current = new URL(url);
  try {
    for (let hop = 0; ; hop++) {
      const res = await get(current, headers, signal, opts.ca);
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECTS.has(status) && location !== undefined) {
        res.resume();
        if (hop >= maxRedirects)
          throw new ReadFailed('BadRedirect', `GET ${url}: more than ${maxRedirects} redirects`);
        const next = new URL(location, current);
        if (next.protocol !== 'http:' && next.protocol !== 'https:') {
          throw new ReadFailed(
            'BadRedirect',
            `GET ${current.href} redirected to ${next.protocol} URL, not http or https`,
          );
        }
        current = next;
        continue;
      }
      if (status === 304 && opts.validators !== undefined) {
        res.resume();
        return { kind: 'NotModified' };
      }
      if (status !== 200) {
        res.destroy();
        throw new ReadFailed(
          'HttpStatus',
          `GET ${current.href} answered ${status}${res.statusMessage ? ` ${res.statusMessage}` : ''}, not 200`,
        );
      }
      const length = Number(res.headers['content-length']);
      const identity = (res.headers['content-encoding'] ?? 'identity') === 'identity';
      if (identity && Number.isFinite(length) && length > opts.maxBytes) {
        res.destroy();
        throw new ReadFailed(
          'TooLarge',
          `GET ${current.href}: the list is ${mib(length)}, over the ${mib(opts.maxBytes)} limit`,
        );
      }
      const body = decoded(res, current.href);
      const parser = new BlocklistParser({
        ...(identity && Number.isFinite(length) ? { expectedBytes: length } : {}),
        ...(opts.shortestPrefix ? { shortestPrefix: opts.shortestPrefix } : {}),
      });
      let bytes = 0;
      for await (const chunk of body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > opts.maxBytes) {
          body.destroy();
          throw new ReadFailed(
            'TooLarge',
            `GET ${current.href}: the list exceeds the ${mib(opts.maxBytes)} limit`,
          );
        }
        parser.push(chunk);
      }
      const validators: Validators = {
        ...(typeof res.headers.etag === 'string' ? { etag: res.headers.etag } : {}),
        ...(typeof res.headers['last-modified'] === 'string'
          ? { lastModified: res.headers['last-modified'] }
          : {}),
      };
      return { kind: 'Read', parse: parser.finish(), validators, bytes };
    }
  } catch (err) {
    if (err instanceof ReadFailed) return { kind: 'Failed', reason: err.reason, message: err.message };
    if (typeof err === 'object' && err !== null && decoderErrors.has(err)) {
      return {
        kind: 'Failed',
        reason: 'CorruptBody',
        message: `GET ${current.href}: the compressed body does not decode (${describe(err)}): truncated or corrupt`,
      };
    }
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (deadline.aborted) {
      return {
        kind: 'Failed',
        reason: 'Timeout',
        message: `GET ${current.href}: no complete answer within ${opts.timeoutMs < 10_000 ? `${opts.timeoutMs} ms` : `${Math.round(opts.timeoutMs / 1000)} s`}`,
      };
    }
    return { kind: 'Failed', reason: 'Unreachable', message: `GET ${current.href}: ${describe(err)}` };
  }
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: string }).code;
  return code && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
}
