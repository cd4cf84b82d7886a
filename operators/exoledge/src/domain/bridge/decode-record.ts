/**
 * Reads one record of the console's directory from parsed JSON: the record format's one
 * definition. It checks shapes, not values: a field must be there with its JSON type, an
 * unknown field is refused (a misspelt `switchs` must not pass for absent switches, and a
 * misspelt `secretname` must not vanish from the manifest), and the enumerations must be
 * members (so the types say the truth). Whether a domain, a port or a name is acceptable
 * is the apiserver's verdict at the dry-run: one set of rules, the CRD's, and its
 * messages reach the console as they are.
 *
 * One exception: `site.namespace` and `site.name` go into the path of the dry-run
 * request, so they are held to the shapes of a namespace and an object name here; a name
 * such as `..` must never reach a URL.
 */

import { DNS_LABEL_REGEX, DNS_SUBDOMAIN_REGEX } from '@operators/kit';
import {
  CaptchaProvider,
  type CaptchaSpec,
  type GatewayRef,
  IssuerKind,
  Posture,
  type Route,
  type ServiceRef,
  type TlsSpec,
  type WeightedServiceRef,
} from '../../api/edge-site.ts';
import { SECURITY_SWITCHES } from '../edge-site/security.ts';
import type { ConsoleSwitches, DomainRecord, SiteRef } from './record.ts';

/** A record, or every problem found in it, each naming its field. */
export type DecodedRecord =
  | { readonly kind: 'Record'; readonly record: DomainRecord }
  | { readonly kind: 'Malformed'; readonly problems: readonly string[] };

const NAMESPACE = new RegExp(DNS_LABEL_REGEX);
const OBJECT_NAME = new RegExp(DNS_SUBDOMAIN_REGEX);

/**
 * `value` as a DomainRecord. Guarantees: `Record` only when there is no problem at all;
 * the record shares no object with `value`; every problem names the field (`routes[1].prefix`).
 */
export function decodeRecord(value: unknown): DecodedRecord {
  const problems: string[] = [];
  const d = new Decoder(problems);
  const o = d.object(value, 'the record', [
    'site',
    'domains',
    'upstream',
    'routes',
    'posture',
    'captcha',
    'tls',
    'gatewayRef',
    'switches',
    'blocklists',
    'allowlists',
  ]);
  if (!o) return { kind: 'Malformed', problems };
  const site = siteRef(d, o.site);
  const domains = d.strings(o.domains, 'domains');
  const upstream = serviceRef(d, o.upstream, 'upstream');
  const routes = d.optional(o.routes, (v) => d.array(v, 'routes', (r, p) => route(d, r, p)));
  const posture = d.member(o.posture, 'posture', Object.values(Posture));
  const captcha = d.optional(o.captcha, (v) => captchaSpec(d, v));
  const tls = d.optional(o.tls, (v) => tlsSpec(d, v));
  const gatewayRef = d.optional(o.gatewayRef, (v) => gatewayRefOf(d, v));
  const switches = consoleSwitches(d, o.switches);
  const blocklists = d.optional(o.blocklists, (v) => d.strings(v, 'blocklists'));
  const allowlists = d.optional(o.allowlists, (v) => d.strings(v, 'allowlists'));
  if (
    problems.length > 0 ||
    !site ||
    !domains ||
    !upstream ||
    !posture ||
    !switches ||
    routes === null ||
    captcha === null ||
    tls === null ||
    gatewayRef === null ||
    blocklists === null ||
    allowlists === null
  ) {
    return { kind: 'Malformed', problems };
  }
  return {
    kind: 'Record',
    record: {
      site,
      domains,
      upstream,
      ...(routes ? { routes } : {}),
      posture,
      ...(captcha ? { captcha } : {}),
      ...(tls ? { tls } : {}),
      ...(gatewayRef ? { gatewayRef } : {}),
      switches,
      ...(blocklists ? { blocklists } : {}),
      ...(allowlists ? { allowlists } : {}),
    },
  };
}

function siteRef(d: Decoder, value: unknown): SiteRef | undefined {
  const o = d.object(value, 'site', ['namespace', 'name']);
  if (!o) return undefined;
  const namespace = d.string(o.namespace, 'site.namespace');
  const name = d.string(o.name, 'site.name');
  if (namespace !== undefined && (namespace.length > 63 || !NAMESPACE.test(namespace))) {
    d.problem(
      `site.namespace: ${JSON.stringify(namespace)} is not a namespace name: lowercase letters, digits and hyphens, at most 63`,
    );
    return undefined;
  }
  if (name !== undefined && (name.length > 253 || !OBJECT_NAME.test(name))) {
    d.problem(
      `site.name: ${JSON.stringify(name)} is not an object name: lowercase letters, digits, hyphens and dots`,
    );
    return undefined;
  }
  return namespace !== undefined && name !== undefined ? { namespace, name } : undefined;
}

function serviceRef(d: Decoder, value: unknown, path: string): ServiceRef | undefined {
  const o = d.object(value, path, ['name', 'port']);
  if (!o) return undefined;
  const name = d.string(o.name, `${path}.name`);
  const port = d.number(o.port, `${path}.port`);
  return name !== undefined && port !== undefined ? { name, port } : undefined;
}

function route(d: Decoder, value: unknown, path: string): Route | undefined {
  const o = d.object(value, path, ['prefix', 'upstreams']);
  if (!o) return undefined;
  const prefix = d.string(o.prefix, `${path}.prefix`);
  const upstreams = d.optional(o.upstreams, (v) =>
    d.array(v, `${path}.upstreams`, (u, p): WeightedServiceRef | undefined => {
      const ou = d.object(u, p, ['name', 'port', 'weight']);
      if (!ou) return undefined;
      const name = d.string(ou.name, `${p}.name`);
      const port = d.number(ou.port, `${p}.port`);
      const weight = d.optional(ou.weight, (w) => d.number(w, `${p}.weight`));
      if (name === undefined || port === undefined || weight === null) return undefined;
      return { name, port, ...(weight !== undefined ? { weight } : {}) };
    }),
  );
  if (prefix === undefined || upstreams === null) return undefined;
  return { prefix, ...(upstreams ? { upstreams } : {}) };
}

function captchaSpec(d: Decoder, value: unknown): CaptchaSpec | undefined {
  const o = d.object(value, 'captcha', ['provider', 'siteKey', 'secretRef']);
  if (!o) return undefined;
  const provider = d.member(o.provider, 'captcha.provider', Object.values(CaptchaProvider));
  const siteKey = d.string(o.siteKey, 'captcha.siteKey');
  const ref = d.object(o.secretRef, 'captcha.secretRef', ['name', 'key']);
  const name = ref && d.string(ref.name, 'captcha.secretRef.name');
  const key = ref && d.optional(ref.key, (k) => d.string(k, 'captcha.secretRef.key'));
  if (provider === undefined || siteKey === undefined || name === undefined || key === null) return undefined;
  return { provider, siteKey, secretRef: { name, ...(key !== undefined ? { key } : {}) } };
}

function tlsSpec(d: Decoder, value: unknown): TlsSpec | undefined {
  const o = d.object(value, 'tls', ['issuerRef', 'secretName']);
  if (!o) return undefined;
  const issuer = d.object(o.issuerRef, 'tls.issuerRef', ['name', 'kind']);
  const name = issuer && d.string(issuer.name, 'tls.issuerRef.name');
  const kind =
    issuer && d.optional(issuer.kind, (k) => d.member(k, 'tls.issuerRef.kind', Object.values(IssuerKind)));
  const secretName = d.optional(o.secretName, (s) => d.string(s, 'tls.secretName'));
  if (name === undefined || kind === null || secretName === null) return undefined;
  return {
    issuerRef: { name, ...(kind !== undefined ? { kind } : {}) },
    ...(secretName !== undefined ? { secretName } : {}),
  };
}

function gatewayRefOf(d: Decoder, value: unknown): GatewayRef | undefined {
  const o = d.object(value, 'gatewayRef', ['name', 'namespace']);
  if (!o) return undefined;
  const name = d.string(o.name, 'gatewayRef.name');
  const namespace = d.optional(o.namespace, (n) => d.string(n, 'gatewayRef.namespace'));
  if (name === undefined || namespace === null) return undefined;
  return { name, ...(namespace !== undefined ? { namespace } : {}) };
}

function consoleSwitches(d: Decoder, value: unknown): ConsoleSwitches | undefined {
  const o = d.object(value, 'switches', SECURITY_SWITCHES);
  if (!o) return undefined;
  // Each switch is required: a checkbox is checked or not, and an absent one would be
  // read as on by the EdgeSite, so the record must say which.
  const [waf, challenge, sensitiveFiles] = SECURITY_SWITCHES.map((s) => {
    const v = o[s];
    if (typeof v === 'boolean') return v;
    d.problem(`switches.${s}: expected true or false (an unchecked box is false), got ${describe(v)}`);
    return undefined;
  });
  if (waf === undefined || challenge === undefined || sensitiveFiles === undefined) return undefined;
  return { waf, challenge, sensitiveFiles };
}

/**
 * Reads JSON values, recording a problem for each mismatch. A reader returns `undefined`
 * when the value is unusable; `optional` returns `undefined` for an absent value and
 * `null` for a present, unusable one, so that callers can tell the two apart.
 */
class Decoder {
  readonly #problems: string[];

  constructor(problems: string[]) {
    this.#problems = problems;
  }

  problem(message: string): void {
    this.#problems.push(message);
  }

  object(
    value: unknown,
    path: string,
    known: readonly string[],
  ): Readonly<Record<string, unknown>> | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.problem(`${path}: expected an object, got ${describe(value)}`);
      return undefined;
    }
    const o = value as Record<string, unknown>;
    const unknown = Object.keys(o).filter((k) => !known.includes(k));
    for (const k of unknown) {
      this.problem(`${path}: unknown field ${JSON.stringify(k)} (known: ${known.join(', ')})`);
    }
    return unknown.length > 0 ? undefined : o;
  }

  string(value: unknown, path: string): string | undefined {
    if (typeof value === 'string') return value;
    this.problem(`${path}: expected a string, got ${describe(value)}`);
    return undefined;
  }

  number(value: unknown, path: string): number | undefined {
    if (typeof value === 'number') return value;
    this.problem(`${path}: expected a number, got ${describe(value)}`);
    return undefined;
  }

  member<T extends string>(value: unknown, path: string, members: readonly T[]): T | undefined {
    if (typeof value === 'string' && (members as readonly string[]).includes(value)) return value as T;
    this.problem(`${path}: expected one of ${members.join(', ')}, got ${describe(value)}`);
    return undefined;
  }

  array<T>(value: unknown, path: string, item: (v: unknown, path: string) => T | undefined): T[] | undefined {
    if (!Array.isArray(value)) {
      this.problem(`${path}: expected a list, got ${describe(value)}`);
      return undefined;
    }
    const out: T[] = [];
    let ok = true;
    value.forEach((v, i) => {
      const decoded = item(v, `${path}[${i}]`);
      if (decoded === undefined) ok = false;
      else out.push(decoded);
    });
    return ok ? out : undefined;
  }

  strings(value: unknown, path: string): string[] | undefined {
    return this.array(value, path, (v, p) => this.string(v, p));
  }

  optional<T>(value: unknown, read: (v: unknown) => T | undefined): T | undefined | null {
    if (value === undefined) return undefined;
    return read(value) ?? null;
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
}
