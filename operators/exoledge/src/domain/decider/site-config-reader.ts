/**
 * The decider's reading of its site's `config.json` (written by the operator, see
 * `edge-site/site-config.ts`). The operator resolves every default, so every field the
 * decider uses must be there: a field missing or out of range means the file is not one
 * the operator wrote (a hand edit, a newer or older operator), and the decider keeps the
 * configuration it had rather than guess. Fields the decider does not use (`upstream`,
 * `filter.failurePolicy`, the captcha's secretRef) are not looked at. Pure.
 */
import {
  CaptchaProvider,
  MAX_CLEARANCE,
  MAX_DIFFICULTY,
  MIN_DIFFICULTY,
  Posture,
} from '../../api/edge-site.ts';
import type { BlocklistSelection } from '../edge-site/security.ts';

/** What the decider applies. */
export interface DeciderSiteConfig {
  readonly posture: Posture;
  /** The site's captcha (its public side: the secret is in the environment). */
  readonly captcha?: { readonly provider: CaptchaProvider; readonly siteKey: string };
  /** Leading zero bits a proof-of-work asks. */
  readonly difficulty: number;
  /** How long a clearance lasts, in seconds. */
  readonly clearanceSeconds: number;
  /** The challenge filter is on. */
  readonly challenge: boolean;
  readonly blocklists: BlocklistSelection;
  /** Allowlist ConfigMaps, each mounted in `<allowlists dir>/<name>/`. */
  readonly allowlists: readonly string[];
}

export type SiteConfigRead =
  | { readonly ok: true; readonly config: DeciderSiteConfig }
  | { readonly ok: false; readonly problems: readonly string[] };

/** A ConfigMap or BlocklistSource name: also a path segment, so never `.`, `..` or with a slash. */
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DURATION = /^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$/;
const POSTURES: ReadonlySet<string> = new Set(Object.values(Posture));
const PROVIDERS: ReadonlySet<string> = new Set(Object.values(CaptchaProvider));

/** Seconds in `1h30m`, `45m`, `90s` (the CRD's clearance syntax), or undefined. */
export function durationSeconds(text: string): number | undefined {
  const m = text === '' ? null : DURATION.exec(text);
  if (m === null) return undefined;
  const seconds = Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
  return Number.isSafeInteger(seconds) ? seconds : undefined;
}

const MAX_CLEARANCE_SECONDS = durationSeconds(MAX_CLEARANCE)!;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function names(v: unknown, field: string, problems: string[]): string[] {
  if (!Array.isArray(v)) {
    problems.push(`${field} is not an array of names`);
    return [];
  }
  const out: string[] = [];
  for (const n of v) {
    if (typeof n === 'string' && n.length <= 253 && NAME.test(n)) out.push(n);
    else problems.push(`${field} holds ${JSON.stringify(n)}, not a Kubernetes name`);
  }
  return out;
}

function selection(v: unknown, problems: string[]): BlocklistSelection {
  if (isRecord(v) && v.kind === 'AllPresumed') return { kind: 'AllPresumed' };
  if (isRecord(v) && v.kind === 'Named')
    return { kind: 'Named', names: names(v.names, 'blocklists.names', problems) };
  problems.push('blocklists is neither {"kind":"AllPresumed"} nor {"kind":"Named","names":[...]}');
  return { kind: 'Named', names: [] };
}

/** Reads `config.json`; every problem is listed, not only the first. */
export function readSiteConfig(text: string): SiteConfigRead {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return { ok: false, problems: [`not JSON: ${e instanceof Error ? e.message : String(e)}`] };
  }
  if (!isRecord(doc)) return { ok: false, problems: ['not a JSON object'] };
  const problems: string[] = [];

  const posture = doc.posture;
  if (typeof posture !== 'string' || !POSTURES.has(posture)) {
    problems.push(`posture is ${JSON.stringify(posture)}, not one of ${[...POSTURES].join(', ')}`);
  }

  let captcha: DeciderSiteConfig['captcha'];
  if (doc.captcha !== undefined) {
    const c = doc.captcha;
    if (!isRecord(c) || typeof c.provider !== 'string' || !PROVIDERS.has(c.provider)) {
      problems.push(`captcha.provider is not one of ${[...PROVIDERS].join(', ')}`);
    } else if (typeof c.siteKey !== 'string' || c.siteKey === '') {
      problems.push('captcha.siteKey is not a non-empty string');
    } else {
      captcha = { provider: c.provider as CaptchaProvider, siteKey: c.siteKey };
    }
  }

  const filter = isRecord(doc.filter) ? doc.filter : undefined;
  if (filter === undefined) problems.push('filter is not an object');
  const difficulty = filter?.difficulty;
  if (
    typeof difficulty !== 'number' ||
    !Number.isInteger(difficulty) ||
    difficulty < MIN_DIFFICULTY ||
    difficulty > MAX_DIFFICULTY
  ) {
    problems.push(
      `filter.difficulty is ${JSON.stringify(difficulty)}, not an integer from ${MIN_DIFFICULTY} to ${MAX_DIFFICULTY}`,
    );
  }
  const clearanceText = filter?.clearance;
  const clearanceSeconds = typeof clearanceText === 'string' ? durationSeconds(clearanceText) : undefined;
  if (clearanceSeconds === undefined || clearanceSeconds < 1 || clearanceSeconds > MAX_CLEARANCE_SECONDS) {
    problems.push(
      `filter.clearance is ${JSON.stringify(clearanceText)}, not a duration such as 1h or 30m up to ${MAX_CLEARANCE}`,
    );
  }

  if (typeof doc.challenge !== 'boolean') problems.push('challenge is not a boolean');
  const blocklists = selection(doc.blocklists, problems);
  const allowlists = names(doc.allowlists, 'allowlists', problems);

  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    config: {
      posture: posture as Posture,
      ...(captcha ? { captcha } : {}),
      difficulty: difficulty as number,
      clearanceSeconds: clearanceSeconds as number,
      challenge: doc.challenge as boolean,
      blocklists,
      allowlists,
    },
  };
}
