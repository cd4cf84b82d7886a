/**
 * The decider's settings, from its environment: the operator's contract (`DeciderEnv` in
 * `edge-site/decider.ts`) and the two variables the decider adds (`DeciderStateEnv`).
 * Pure: the environment in, settings or every problem out.
 */
import { DeciderEnv } from '../edge-site/decider.ts';

/** Variables beyond the operator's `DeciderEnv`. */
export const DeciderStateEnv = {
  /**
   * `redis://[user:password@]host:port[/db]` (or `rediss://`): where clearances, counters
   * and the signing key live. Absent: the decider runs without state (see the docs:
   * nobody can be cleared, nothing is counted) and says so in `/readyz`.
   */
  ValkeyUrl: 'EXOLEDGE_VALKEY_URL',
  /**
   * How many proxies, the gateway first, append to `X-Forwarded-For` and are trusted:
   * the client address is the N-th entry from the right. Default 0: the header is not read.
   */
  TrustedHops: 'EXOLEDGE_TRUSTED_HOPS',
} as const;

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

  const valkeyText = env[DeciderStateEnv.ValkeyUrl]?.trim() || undefined;
  if (valkeyText !== undefined) {
    let protocol: string | undefined;
    try {
      protocol = new URL(valkeyText).protocol;
    } catch {
      protocol = undefined;
    }
    if (protocol !== 'redis:' && protocol !== 'rediss:') {
      problems.push(`${DeciderStateEnv.ValkeyUrl} is not a redis:// or rediss:// URL`);
    }
  }

  const hopsText = env[DeciderStateEnv.TrustedHops]?.trim() || '0';
  const trustedHops = Number(hopsText);
  if (!/^[0-9]{1,2}$/.test(hopsText) || trustedHops > MAX_TRUSTED_HOPS) {
    problems.push(
      `${DeciderStateEnv.TrustedHops} is ${JSON.stringify(hopsText)}, not an integer from 0 to ${MAX_TRUSTED_HOPS}`,
    );
  }

  if (problems.length > 0 || listen === undefined) return { ok: false, problems };
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
    },
  };
}
