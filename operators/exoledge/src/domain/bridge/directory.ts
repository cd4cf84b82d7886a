/**
 * The console's directory of domains: the bridge's one input besides the request. The
 * console owns it and writes it; the bridge only reads it, by host. `DomainDirectory` is
 * the port; `readDirectory` reads the JSON format that the shipped implementation (a
 * file, in the cluster a mounted ConfigMap: src/bridge/directory-file.ts) holds:
 *
 *     { "domains": { "<host>": <record>, ... } }
 *
 * A record the bridge cannot read is kept as `Malformed` rather than dropped: asked for
 * its host, the bridge then says what is wrong with the console's record instead of
 * claiming the host is unknown.
 */
import { type DecodedRecord, decodeRecord } from './decode-record.ts';
import { parseHost } from './host.ts';

/** What the directory holds for one host. */
export type DirectoryEntry = DecodedRecord;

export interface DomainDirectory {
  /**
   * The entry for `host`, a lowercase name as `parseHost` gives it; `undefined` when the
   * console has no record for it. Never throws for a directory that changed or broke
   * after it was first read: it answers from the last contents it could read.
   */
  lookup(host: string): Promise<DirectoryEntry | undefined>;
}

/** The directory's contents, or why the text is not a directory at all. */
export type DirectoryContents =
  | {
      readonly kind: 'Read';
      /** By lowercase host. */
      readonly entries: ReadonlyMap<string, DirectoryEntry>;
      /** Keys that could not be used, each with its reason; their records are not served. */
      readonly problems: readonly string[];
    }
  | { readonly kind: 'Unreadable'; readonly message: string };

/**
 * Reads the directory's JSON text. `Unreadable` only when the text as a whole is not a
 * directory (not JSON, no `domains` object); a bad record is an entry of its own
 * (`Malformed`), and a bad key a problem, so one mistake does not hide every other domain.
 * Two keys that differ only by case name the same host: neither is served, since the
 * bridge could not know which one the console meant.
 */
export function readDirectory(text: string): DirectoryContents {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { kind: 'Unreadable', message: `not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  const domains = isObject(json) ? json.domains : undefined;
  if (!isObject(json) || !isObject(domains)) {
    return {
      kind: 'Unreadable',
      message:
        'expected an object with a "domains" object, by host: {"domains": {"shop.example.com": {...}}}',
    };
  }
  const entries = new Map<string, DirectoryEntry>();
  const problems: string[] = [];
  const ambiguous = new Set<string>();
  for (const [key, value] of Object.entries(domains)) {
    const parsed = parseHost([key]);
    if (parsed.kind === 'BadHost') {
      problems.push(`domains[${JSON.stringify(key)}]: ${parsed.message}`);
      continue;
    }
    if (entries.has(parsed.host) || ambiguous.has(parsed.host)) {
      problems.push(
        `domains: ${parsed.host} is written more than once (keys differing by case): neither is served`,
      );
      entries.delete(parsed.host);
      ambiguous.add(parsed.host);
      continue;
    }
    entries.set(parsed.host, decodeRecord(value));
  }
  return { kind: 'Read', entries, problems };
}

function isObject(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
