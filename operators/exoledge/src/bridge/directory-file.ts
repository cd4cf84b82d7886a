/**
 * The shipped DomainDirectory: a JSON file the console writes (in the cluster, a key of
 * a ConfigMap mounted as a volume). The file is re-read when it changes, checked at each
 * lookup by its identity and size (a mounted ConfigMap is updated by swapping a symlink,
 * which a watcher on the file misses; a `stat` follows the link and sees the new file).
 *
 * A file that breaks after the start (half-written, not JSON) does not empty the
 * directory: the last contents read stay served, and the problem is logged once per
 * version of the file. A file unreadable at the start stops the bridge (`open` throws):
 * there is no last good state to fall back on.
 */
import { readFile, stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import {
  type DirectoryContents,
  type DirectoryEntry,
  type DomainDirectory,
  readDirectory,
} from '../domain/bridge/index.ts';

type Entries = ReadonlyMap<string, DirectoryEntry>;

export class JsonFileDirectory implements DomainDirectory {
  readonly path: string;
  readonly #log: Logger;
  #entries: Entries;
  /** The version of the file last looked at, read or not. */
  #seen: string;
  #refreshing: Promise<void> | undefined;

  private constructor(path: string, log: Logger, entries: Entries, seen: string) {
    this.path = path;
    this.#log = log;
    this.#entries = entries;
    this.#seen = seen;
  }

  /** Reads `path` once; throws with the reason when it is missing or not a directory. */
  static async open(path: string, log: Logger): Promise<JsonFileDirectory> {
    const seen = versionOf(await stat(path));
    const contents = readDirectory(await readFile(path, 'utf8'));
    if (contents.kind === 'Unreadable') throw new Error(`${path}: ${contents.message}`);
    logProblems(log, path, contents);
    return new JsonFileDirectory(path, log, contents.entries, seen);
  }

  async lookup(host: string): Promise<DirectoryEntry | undefined> {
    // One refresh at a time: concurrent lookups wait for it rather than read the file again.
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = undefined;
    });
    await this.#refreshing;
    return this.#entries.get(host);
  }

  async #refresh(): Promise<void> {
    let version: string;
    let text: string;
    try {
      version = versionOf(await stat(this.path));
      if (version === this.#seen) return;
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      // Between two versions of a mounted ConfigMap the file can be briefly missing.
      this.#log.warn({ path: this.path, err }, 'cannot read the directory file; serving its last contents');
      return;
    }
    this.#seen = version;
    const contents = readDirectory(text);
    if (contents.kind === 'Unreadable') {
      this.#log.error(
        { path: this.path, problem: contents.message },
        'the directory file changed and cannot be read; serving its last contents',
      );
      return;
    }
    logProblems(this.#log, this.path, contents);
    this.#entries = contents.entries;
    this.#log.info({ path: this.path, hosts: contents.entries.size }, 'directory re-read');
  }
}

function versionOf(s: {
  readonly ino: number;
  readonly dev: number;
  readonly mtimeMs: number;
  readonly size: number;
}): string {
  return `${s.dev}:${s.ino}:${s.mtimeMs}:${s.size}`;
}

function logProblems(log: Logger, path: string, contents: DirectoryContents & { kind: 'Read' }): void {
  for (const problem of contents.problems)
    log.warn({ path, problem }, 'a host of the directory is not served');
  const malformed = [...contents.entries].filter(([, e]) => e.kind === 'Malformed').map(([h]) => h);
  if (malformed.length > 0) {
    log.warn(
      { path, hosts: malformed },
      'records the bridge cannot read: asked for, they answer MalformedRecord',
    );
  }
}
