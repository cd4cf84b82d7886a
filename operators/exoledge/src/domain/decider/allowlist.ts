/**
 * Reading an allowlist: a ConfigMap of the site's namespace, mounted in the decider's
 * pods, whose every data key is a file of one IPv4 or IPv6 address or prefix per line,
 * `#` (or `;`) comments, blank lines allowed: the blocklist format, read by the same
 * strict parser.
 *
 * An allowlist lowers protection, so it is read all or nothing: one line that does not
 * read, or a prefix shorter than the blocklists' floor (a stray `0.0.0.0/0` would exempt
 * the world), and the whole allowlist is refused; the decider keeps the version it had
 * and reports the lines. Pure.
 */
import {
  DEFAULT_SHORTEST_PREFIX,
  type Prefix,
  type PrefixList,
  parseBlocklist,
  prefixesOf,
  prefixListOf,
} from '../blocklist/index.ts';

/** One data key of the ConfigMap, as the kubelet writes it: a file. */
export interface AllowlistFile {
  readonly key: string;
  readonly text: string;
}

export type AllowlistRead =
  | { readonly ok: true; readonly prefixes: PrefixList; readonly entries: number }
  | { readonly ok: false; readonly problems: readonly string[] };

/** How many refused lines a report names; the count is always given. */
export const REPORTED_LINES = 5;

/** The prefixes of an allowlist's files, or why it is refused. */
export function readAllowlist(name: string, files: readonly AllowlistFile[]): AllowlistRead {
  const problems: string[] = [];
  const prefixes: Prefix[] = [];
  for (const file of files) {
    const parsed = parseBlocklist(file.text, {
      shortestPrefix: DEFAULT_SHORTEST_PREFIX,
      detailLimit: REPORTED_LINES,
    });
    const where = `allowlist ${name}, key ${file.key}`;
    for (const m of parsed.malformed) problems.push(`${where}, line ${m.line}: ${m.message}: ${m.text}`);
    for (const t of parsed.tooShort) {
      problems.push(
        `${where}, line ${t.line}: ${t.prefix} is shorter than /${DEFAULT_SHORTEST_PREFIX.ipv4} (IPv4) or ` +
          `/${DEFAULT_SHORTEST_PREFIX.ipv6} (IPv6): it would exempt too much`,
      );
    }
    const unreported =
      parsed.counts.malformed + parsed.counts.tooShort - parsed.malformed.length - parsed.tooShort.length;
    if (unreported > 0) problems.push(`${where}: ${unreported} more lines refused`);
    for (const p of prefixesOf(parsed.entries)) prefixes.push(p);
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, prefixes: prefixListOf(prefixes), entries: prefixes.length };
}
