/**
 * The decider's settings, from its environment: the operator's contract (`DeciderEnv` in
 * `edge-site/decider.ts`).
 * Pure: the environment in, settings or every problem out.
 */
import { DeciderEnv } from '../edge-site/decider.ts';

/** The shortest signing key accepted, in characters: `openssl rand -hex 32` gives 64. */
export const MIN_SIGNING_KEY_LENGTH = 32;

/** More hops than this is a configuration mistake, not a topology. */
export const MAX_TRUSTED_HOPS = 10;

export interface ListenAddress {
  /** Undefined: every interface, IPv4 and IPv6. */
  readonly host: string | undefined;
  readonly port: number;
}

export interface DeciderSettings {
  readonly siteNamespace: string;
  readonly site: string;
  readonly siteConfigPath: string;
  readonly shardNamespace: string;
  readonly allowlistsDir: string;
  readonly listen: ListenAddress;
  readonly valkeyUrl: string | undefined;
  readonly trustedHops: number;
  /**
   * A header the gateway's only client (a CDN) overwrites with the client's address,
   * read before `x-forwarded-for` (`client-address.ts`); lower case. Undefined: none.
   */
  readonly clientAddressHeader?: string | undefined;
  /**
   * Keys clearances and nonces are signed with: the first signs, all are accepted (a
   * rotation keeps the old one second for a clearance's lifetime). Empty: the key is
   * made and shared in Valkey.
   */
  readonly signingKeys?: readonly Buffer[] | undefined;
  /** The captcha provider's secret key; without it no captcha answer can be checked. */
  readonly captchaSecret?: string | undefined;
  /** Where captcha answers are verified; undefined: the provider's own endpoint. */
  readonly captchaVerifyUrl?: string | undefined;
}

export type SettingsRead =
  | { readonly ok: true; readonly settings: DeciderSettings }
  | { readonly ok: false; readonly problems: readonly string[] };

/** `:8080`, `8080`, `127.0.0.1:8080`, `[::1]:8080`; undefined when it is none of these. */
export function readListen(text: string): ListenAddress | undefined {
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]]*):)?([0-9]{1,5})$/.exec(text.trim());
  if (m === null) return undefined;
  const port = Number(m[2]);
  if (port > 65535) return undefined;
  const host = m[1] === undefined || m[1] === '' ? undefined : m[1].replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}

/** Whether `text` is a URL the Valkey client takes: `redis://` or `rediss://`. */
export function isValkeyUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'redis:' || protocol === 'rediss:';
  } catch {
    return false;
  }
}

/** `0` to {@link MAX_TRUSTED_HOPS}; undefined for anything else. */
export function readTrustedHops(text: string): number | undefined {
  const n = Number(text);
  return /^[0-9]{1,2}$/.test(text) && n <= MAX_TRUSTED_HOPS ? n : undefined;
}

export function readDeciderEnv(env: Readonly<Record<string, string | undefined>>): SettingsRead {
  const problems: string[] = [];
  const required = (name: string): string => {
    const v = env[name]?.trim();
    if (!v) problems.push(`${name} is not set`);
    return v ?? '';
  };
  const siteNamespace = required(DeciderEnv.SiteNamespace);
  const site = required(DeciderEnv.Site);
  const siteConfigPath = required(DeciderEnv.SiteConfig);
  const shardNamespace = required(DeciderEnv.ShardNamespace);
  const allowlistsDir = required(DeciderEnv.AllowlistsDir);
  const listenText = env[DeciderEnv.Listen]?.trim() || ':8080';
  const listen = readListen(listenText);
  if (listen === undefined)
    problems.push(`${DeciderEnv.Listen} is ${JSON.stringify(listenText)}, not [host]:port`);

  const valkeyText = env[DeciderEnv.ValkeyUrl]?.trim() || undefined;
  if (valkeyText !== undefined && !isValkeyUrl(valkeyText)) {
    problems.push(`${DeciderEnv.ValkeyUrl} is not a redis:// or rediss:// URL`);
  }

  const hopsText = env[DeciderEnv.TrustedHops]?.trim() || '0';
  const trustedHops = readTrustedHops(hopsText);
  if (trustedHops === undefined) {
    problems.push(
      `${DeciderEnv.TrustedHops} is ${JSON.stringify(hopsText)}, not an integer from 0 to ${MAX_TRUSTED_HOPS}`,
    );
  }

  const headerText = env[DeciderEnv.ClientAddressHeader]?.trim().toLowerCase() || undefined;
  if (headerText !== undefined && !/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(headerText)) {
    problems.push(`${DeciderEnv.ClientAddressHeader} is not a header name`);
  }
  const keysText = env[DeciderEnv.SigningKeys]?.trim() || '';
  const keys = keysText === '' ? [] : keysText.split(',').map((k) => k.trim());
  if (keys.some((k) => k.length < MIN_SIGNING_KEY_LENGTH)) {
    // The keys themselves are never repeated in a message: they are secrets.
    problems.push(
      `${DeciderEnv.SigningKeys}: every comma-separated key must be at least ${MIN_SIGNING_KEY_LENGTH} characters`,
    );
  }

  const captchaSecret = env[DeciderEnv.CaptchaSecret]?.trim() || undefined;
  const captchaVerifyUrl = env[DeciderEnv.CaptchaVerifyUrl]?.trim() || undefined;
  if (captchaVerifyUrl !== undefined && !/^https?:\/\/[^/]/.test(captchaVerifyUrl)) {
    problems.push(`${DeciderEnv.CaptchaVerifyUrl} is not an http:// or https:// URL`);
  }

  if (problems.length > 0 || listen === undefined || trustedHops === undefined)
    return { ok: false, problems };
  return {
    ok: true,
    settings: {
      siteNamespace,
      site,
      siteConfigPath,
      shardNamespace,
      allowlistsDir,
      listen,
      valkeyUrl: valkeyText,
      trustedHops,
      clientAddressHeader: headerText,
      signingKeys: keys.map((k) => Buffer.from(k, 'utf8')),
      captchaSecret,
      captchaVerifyUrl,
    },
  };
}
