/**
 * The Kubernetes URL library: `url(s)`, `isURL(s)`, and `getScheme`, `getHost`,
 * `getHostname`, `getPort`, `getEscapedPath`, `getQuery`.
 *
 * Kubernetes validates with Go's url.ParseRequestURI (an absolute URL or an absolute
 * path, no fragment handling) and then reads the parts with url.Parse. This module
 * follows those two functions for the inputs rules meet: schemes, authority with user
 * info, bracketed IPv6 hosts, ports, percent-escapes, queries.
 */
import { charge } from './cost.ts';
import { CEL_EQUALS } from './equality.ts';
import { evalError, type Registrar } from './library.ts';
import { TO_JSON_STRING } from './values.ts';

export class KubeUrl {
  readonly raw: string;
  readonly scheme: string;
  readonly host: string;
  readonly rawPath: string;
  readonly rawQuery: string;
  constructor(raw: string, scheme: string, host: string, rawPath: string, rawQuery: string) {
    this.raw = raw;
    this.scheme = scheme;
    this.host = host;
    this.rawPath = rawPath;
    this.rawQuery = rawQuery;
  }
  toString(): string {
    return this.raw;
  }
  [TO_JSON_STRING](): string {
    return this.raw;
  }
  [CEL_EQUALS](o: unknown): boolean {
    return o instanceof KubeUrl && o.raw === this.raw;
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: Go refuses ASCII control characters in URLs.
const CTL = /[\x00-\x1f\x7f]/;
const VALID_ESCAPES = /%(?![0-9A-Fa-f]{2})/;

function getScheme(raw: string): { scheme: string; rest: string } {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (/[A-Za-z]/.test(c)) continue;
    if (/[0-9+\-.]/.test(c)) {
      if (i === 0) return { scheme: '', rest: raw };
      continue;
    }
    if (c === ':') {
      if (i === 0) throw new Error('missing protocol scheme');
      return { scheme: raw.slice(0, i), rest: raw.slice(i + 1) };
    }
    return { scheme: '', rest: raw };
  }
  return { scheme: '', rest: raw };
}

function checkHost(host: string): void {
  if (host.startsWith('[')) {
    const end = host.lastIndexOf(']');
    if (end < 0) throw new Error("missing ']' in host");
    const port = host.slice(end + 1);
    if (port !== '' && !/^:\d*$/.test(port)) throw new Error(`invalid port "${port}" after host`);
    return;
  }
  const colon = host.lastIndexOf(':');
  if (colon >= 0 && !/^:\d*$/.test(host.slice(colon)))
    throw new Error(`invalid port "${host.slice(colon)}" after host`);
  if (VALID_ESCAPES.test(host)) throw new Error('invalid URL escape');
  const bad = /[^A-Za-z0-9\-._~!$&'()*+,;=:[\]<>"%\u0080-\u{10ffff}]/u.exec(host);
  if (bad) throw new Error(`invalid character "${bad[0]}" in host name`);
}

/** Go's url.parse(raw, viaRequest): returns the parts or throws with Go's message. */
function goParse(
  raw: string,
  viaRequest: boolean,
): { scheme: string; host: string; path: string; query: string } {
  if (CTL.test(raw)) throw new Error('net/url: invalid control character in URL');
  if (raw === '' && viaRequest) throw new Error('empty url');
  if (raw === '*') return { scheme: '', host: '', path: '*', query: '' };
  const { scheme, rest: afterScheme } = getScheme(raw);
  let rest = afterScheme;
  let query = '';
  const q = rest.indexOf('?');
  if (q >= 0) {
    query = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  if (!rest.startsWith('/')) {
    if (scheme !== '') return { scheme: scheme.toLowerCase(), host: '', path: '', query };
    if (viaRequest) throw new Error('invalid URI for request');
    const colon = rest.indexOf(':');
    const slash = rest.indexOf('/');
    if (colon >= 0 && (slash < 0 || colon < slash))
      throw new Error('first path segment in URL cannot contain colon');
  }
  let host = '';
  if ((scheme !== '' || (!viaRequest && !rest.startsWith('///'))) && rest.startsWith('//')) {
    let authority = rest.slice(2);
    rest = '';
    const slash = authority.indexOf('/');
    if (slash >= 0) {
      rest = authority.slice(slash);
      authority = authority.slice(0, slash);
    }
    const at = authority.lastIndexOf('@');
    host = authority.slice(at + 1);
    checkHost(host);
  }
  if (VALID_ESCAPES.test(rest)) throw new Error('invalid URL escape');
  return { scheme: scheme.toLowerCase(), host, path: rest, query };
}

function parseUrl(s: string): KubeUrl | string {
  try {
    goParse(s, true);
    const hash = s.indexOf('#');
    const u = goParse(hash >= 0 ? s.slice(0, hash) : s, false);
    return new KubeUrl(s, u.scheme, u.host, u.path, u.query);
  } catch (err) {
    return `URL parse error during conversion from string: parse "${s}": ${(err as Error).message}`;
  }
}

function urlOf(s: string): KubeUrl {
  charge(1 + Math.ceil(s.length / 10));
  const u = parseUrl(s);
  if (typeof u === 'string') throw evalError(u);
  return u;
}

function hostname(u: KubeUrl): string {
  const h = u.host;
  if (h.startsWith('[')) return h.slice(1, h.lastIndexOf(']'));
  const colon = h.lastIndexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
}

function port(u: KubeUrl): string {
  const h = u.host;
  const colon = h.lastIndexOf(':');
  if (colon < 0 || (h.startsWith('[') && colon < h.lastIndexOf(']'))) return '';
  return h.slice(colon + 1);
}

function unescapeUrl(s: string, plusIsSpace: boolean): string {
  const t = plusIsSpace ? s.replaceAll('+', ' ') : s;
  try {
    return decodeURIComponent(t);
  } catch {
    return t;
  }
}

/** Go's url.Values from the raw query: pairs split on '&', pairs containing ';' dropped. */
function query(u: KubeUrl): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const pair of u.rawQuery.split('&')) {
    if (pair === '' || pair.includes(';')) continue;
    const eq = pair.indexOf('=');
    const k = unescapeUrl(eq >= 0 ? pair.slice(0, eq) : pair, true);
    const v = unescapeUrl(eq >= 0 ? pair.slice(eq + 1) : '', true);
    if (!Object.hasOwn(out, k))
      Object.defineProperty(out, k, { value: [], enumerable: true, writable: true, configurable: true });
    (out[k] as string[]).push(v);
  }
  return out;
}

/** Go's EscapedPath: the raw path if it is a valid encoding, else the path escaped. */
function escapedPath(u: KubeUrl): string {
  const raw = u.rawPath;
  if (/^[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*$/.test(raw)) return raw;
  return Array.from(unescapeUrl(raw, false))
    .map((ch) => (/[A-Za-z0-9\-._~$&+,/:;=@]/.test(ch) ? ch : encodeURIComponent(ch).toUpperCase()))
    .join('');
}

export function registerUrl(r: Registrar): void {
  r.env.registerType('kubernetes.URL', KubeUrl);
  r.env.registerOperator('kubernetes.URL == kubernetes.URL', (a: KubeUrl, b: KubeUrl) => a.raw === b.raw);
  const U = 'kubernetes.URL';
  r.fn(`url(string): ${U}`, urlOf)
    .fn('isURL(string): bool', (s: string) => typeof parseUrl(s) !== 'string')
    .fn(`${U}.getScheme(): string`, (u: KubeUrl) => u.scheme)
    .fn(`${U}.getHost(): string`, (u: KubeUrl) => u.host)
    .fn(`${U}.getHostname(): string`, hostname)
    .fn(`${U}.getPort(): string`, port)
    .fn(`${U}.getEscapedPath(): string`, escapedPath)
    .fn(`${U}.getQuery(): map<string, list<string>>`, query);
}
