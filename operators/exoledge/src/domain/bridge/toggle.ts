/**
 * `POST /domains/security`: the console asks what the manifest becomes with one switch
 * flipped. The bridge does not store the switch (the console keeps its own state and
 * writes its directory); it answers with the manifest to commit, or refuses when the
 * switch would mean nothing: on a shared gateway, `spec.security` changes nothing per site.
 */
import { SECURITY_SWITCHES, type SecuritySwitch } from '../edge-site/security.ts';
import type { DomainRecord } from './record.ts';

export interface ToggleRequest {
  readonly switch: SecuritySwitch;
  readonly enabled: boolean;
}

export type ParsedToggle =
  | { readonly kind: 'Toggle'; readonly toggle: ToggleRequest }
  | { readonly kind: 'BadToggle'; readonly message: string };

const EXPECTED = `a JSON object {"switch": ${SECURITY_SWITCHES.map((s) => `"${s}"`).join(' | ')}, "enabled": true | false}`;

/** The request body, read strictly: exactly the two fields, a known switch, a boolean. */
export function parseToggle(body: string): ParsedToggle {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { kind: 'BadToggle', message: `the body is not JSON: expected ${EXPECTED}` };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return { kind: 'BadToggle', message: `expected ${EXPECTED}` };
  }
  const fields = Object.keys(json);
  const extra = fields.filter((f) => f !== 'switch' && f !== 'enabled');
  if (extra.length > 0) {
    return {
      kind: 'BadToggle',
      message: `unknown field ${extra.map((f) => JSON.stringify(f)).join(', ')}: expected ${EXPECTED}`,
    };
  }
  const { switch: name, enabled } = json as { switch?: unknown; enabled?: unknown };
  if (!isSwitch(name)) {
    return {
      kind: 'BadToggle',
      message: `switch must be one of ${SECURITY_SWITCHES.join(', ')}, got ${JSON.stringify(name) ?? 'nothing'}`,
    };
  }
  if (typeof enabled !== 'boolean') {
    return {
      kind: 'BadToggle',
      message: `enabled must be true or false, got ${JSON.stringify(enabled) ?? 'nothing'}`,
    };
  }
  return { kind: 'Toggle', toggle: { switch: name, enabled } };
}

export type ToggleOutcome =
  /** The record as the console would have it with the switch set. */
  | { readonly kind: 'Toggled'; readonly record: DomainRecord }
  /** The site joins a shared gateway: the switch has no effect, and `message` names the edge that carries it. */
  | { readonly kind: 'CarriedBySharedEdge'; readonly message: string };

/** `record` with `toggle` applied; refused on a shared gateway, whatever the switch and its value. */
export function toggleSwitch(host: string, record: DomainRecord, toggle: ToggleRequest): ToggleOutcome {
  const gateway = record.gatewayRef;
  if (gateway !== undefined) {
    const edge = `${gateway.namespace ?? record.site.namespace}/${gateway.name}`;
    return {
      kind: 'CarriedBySharedEdge',
      message:
        `${toggle.switch} of ${host} is carried by the shared edge: the site joins the shared gateway ${edge}, ` +
        'which carries the WAF, the challenge, the sensitive files and the lists once for every site on it. ' +
        "spec.security changes nothing for one site there, so the switch is not written; change it on the shared edge's gateway.",
    };
  }
  return {
    kind: 'Toggled',
    record: { ...record, switches: { ...record.switches, [toggle.switch]: toggle.enabled } },
  };
}

function isSwitch(v: unknown): v is SecuritySwitch {
  return typeof v === 'string' && (SECURITY_SWITCHES as readonly string[]).includes(v);
}
