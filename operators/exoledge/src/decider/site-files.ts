/**
 * The files the kubelet mounts for the decider: its site's `config.json` and one folder
 * per allowlist ConfigMap. Reloaded by polling (`poll`, every `POLL_INTERVAL_MS` by the
 * decider): each file's content is hashed and compared with what was read last, so an
 * unchanged file costs a read and a hash, and a change applies without a restart. The
 * kubelet updates a ConfigMap volume by writing a new folder and swapping the `..data`
 * symlink to it, so every read sees a whole old file or a whole new one (and an allowlist
 * is read from the version `..data` names, so its keys are of one version); an update
 * reaches the pods within the kubelet's sync period (about a minute), then within one
 * poll.
 *
 * A file that does not read keeps what was read before it: a configuration that does not
 * parse leaves the previous configuration applied, an allowlist with a bad line leaves
 * its previous version exempting. The problem is reported (`problems`, which `/readyz`
 * shows) until the file is fixed.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { PrefixList } from '../domain/blocklist/index.ts';
import { type AllowlistFile, readAllowlist } from '../domain/decider/allowlist.ts';
import { type DeciderSiteConfig, readSiteConfig } from '../domain/decider/site-config-reader.ts';
import type { Address, PrefixTable } from './prefix-table.ts';
import { allowlistTable } from './served-lists.ts';

/** How often the files are read: the brief's 2 s, cheap for a few small files. */
export const POLL_INTERVAL_MS = 2000;

/** A file that did not read, newly: each is logged and counted once. */
export interface FileProblem {
  readonly source: 'site-config' | 'allowlist';
  readonly message: string;
}

/** What a poll changed. */
export interface PollOutcome {
  readonly configChanged: boolean;
  readonly allowlistsChanged: boolean;
  readonly newProblems: readonly FileProblem[];
}

interface Allowlist {
  readonly hash: string;
  readonly prefixes: PrefixList;
  readonly entries: number;
}

export class SiteFiles {
  readonly #configPath: string;
  readonly #allowlistsDir: string;
  #config: DeciderSiteConfig | undefined;
  #configHash: string | undefined;
  #configProblem: string | undefined;
  readonly #allowlists = new Map<string, Allowlist>();
  /** By allowlist name: the problem of its latest content, with that content's hash. */
  readonly #allowlistProblems = new Map<string, { hash: string; message: string }>();
  readonly #notMounted = new Set<string>();
  #table: PrefixTable = allowlistTable(new Map());

  constructor(configPath: string, allowlistsDir: string) {
    this.#configPath = configPath;
    this.#allowlistsDir = allowlistsDir;
  }

  /** The configuration applied; undefined until one has been read. */
  get config(): DeciderSiteConfig | undefined {
    return this.#config;
  }

  isAllowlisted(address: Address): boolean {
    return this.#table.lookup(address).outcome === 'listed';
  }

  /** What `/readyz` reports: files that do not read, each with what is kept instead. */
  problems(): string[] {
    const out: string[] = [];
    if (this.#configProblem !== undefined) out.push(this.#configProblem);
    for (const [, p] of this.#allowlistProblems) out.push(p.message);
    return out;
  }

  /** Facts that are not problems: allowlists named but not mounted, served as empty. */
  notes(): string[] {
    return [...this.#notMounted].map(
      (name) => `allowlist ${name} has no files under ${join(this.#allowlistsDir, name)}: it exempts nobody`,
    );
  }

  /** Allowlists served, with their entries. */
  get allowlists(): ReadonlyMap<string, number> {
    return new Map([...this.#allowlists].map(([name, a]) => [name, a.entries]));
  }

  async poll(): Promise<PollOutcome> {
    const newProblems: FileProblem[] = [];
    const configChanged = await this.#pollConfig(newProblems);
    const allowlistsChanged = await this.#pollAllowlists(newProblems);
    return { configChanged, allowlistsChanged, newProblems };
  }

  async #pollConfig(newProblems: FileProblem[]): Promise<boolean> {
    let text: string;
    try {
      text = await readFile(this.#configPath, 'utf8');
    } catch (err) {
      const message = `site configuration ${this.#configPath} cannot be read (${errorText(err)})${this.#keeping()}`;
      if (message !== this.#configProblem) newProblems.push({ source: 'site-config', message });
      this.#configProblem = message;
      this.#configHash = undefined;
      return false;
    }
    const hash = sha256(text);
    if (hash === this.#configHash) return false;
    this.#configHash = hash;
    const read = readSiteConfig(text);
    if (!read.ok) {
      const message = `site configuration ${this.#configPath} is refused: ${read.problems.join('; ')}${this.#keeping()}`;
      newProblems.push({ source: 'site-config', message });
      this.#configProblem = message;
      return false;
    }
    this.#configProblem = undefined;
    const changed = JSON.stringify(read.config) !== JSON.stringify(this.#config);
    this.#config = read.config;
    return changed;
  }

  #keeping(): string {
    return this.#config === undefined
      ? '; no configuration was ever read, so the decider is not ready'
      : '; the previous configuration stays applied';
  }

  async #pollAllowlists(newProblems: FileProblem[]): Promise<boolean> {
    const names = this.#config?.allowlists ?? [];
    let changed = false;
    for (const name of [...this.#allowlists.keys()]) {
      if (!names.includes(name)) {
        this.#allowlists.delete(name);
        changed = true;
      }
    }
    for (const name of [...this.#allowlistProblems.keys()]) {
      if (!names.includes(name)) this.#allowlistProblems.delete(name);
    }
    for (const name of [...this.#notMounted]) if (!names.includes(name)) this.#notMounted.delete(name);

    for (const name of names) {
      const dir = join(this.#allowlistsDir, name);
      let files: AllowlistFile[];
      try {
        files = await readFolder(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
          files = [];
        } else {
          const message = `allowlist ${name} cannot be read from ${dir} (${errorText(err)})${keeping(this.#allowlists.has(name))}`;
          if (this.#allowlistProblems.get(name)?.message !== message) {
            newProblems.push({ source: 'allowlist', message });
          }
          this.#allowlistProblems.set(name, { hash: '', message });
          continue;
        }
      }
      if (files.length === 0) this.#notMounted.add(name);
      else this.#notMounted.delete(name);
      const hash = sha256(files.map((f) => `${f.key}\0${f.text}\0`).join(''));
      if (this.#allowlists.get(name)?.hash === hash) {
        this.#allowlistProblems.delete(name);
        continue;
      }
      if (this.#allowlistProblems.get(name)?.hash === hash) continue;
      const read = readAllowlist(name, files);
      if (!read.ok) {
        const message = `allowlist ${name} is refused: ${read.problems.join('; ')}${keeping(this.#allowlists.has(name))}`;
        newProblems.push({ source: 'allowlist', message });
        this.#allowlistProblems.set(name, { hash, message });
        continue;
      }
      this.#allowlistProblems.delete(name);
      this.#allowlists.set(name, { hash, prefixes: read.prefixes, entries: read.entries });
      changed = true;
    }
    if (changed) {
      this.#table = allowlistTable(new Map([...this.#allowlists].map(([n, a]) => [n, a.prefixes])));
    }
    return changed;
  }
}

function keeping(had: boolean): string {
  return had ? '; its previous version stays applied' : '; it exempts nobody until it reads';
}

/**
 * The data keys of a mounted ConfigMap, of one version. The kubelet writes a version to
 * a new folder, swaps `..data` to it, and only then links a key the version adds at the
 * top level: so the keys are listed from the folder `..data` names, not from the top-level
 * links (which, for a moment, are of two versions mixed). A folder without `..data` (not
 * a kubelet volume) is read as it is.
 */
async function readFolder(dir: string): Promise<AllowlistFile[]> {
  // The next update can swap `..data` and remove this version's folder while it is read:
  // the read counts only if `..data` still names the same version after it.
  for (let attempt = 1; ; attempt++) {
    const version = await currentVersion(dir);
    if (version === undefined) return readKeys(dir);
    try {
      const files = await readKeys(join(dir, version));
      if ((await currentVersion(dir)) === version) return files;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (attempt >= 3) throw new Error(`${dir} changed during three reads in a row`);
  }
}

/** The version folder `..data` names, or undefined for a folder that is not a kubelet volume. */
async function currentVersion(dir: string): Promise<string | undefined> {
  try {
    return await readlink(join(dir, '..data'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EINVAL') return undefined;
    throw err;
  }
}

/** Every entry of a folder but the kubelet's `..`-named ones, with its text. */
async function readKeys(dir: string): Promise<AllowlistFile[]> {
  const entries = (await readdir(dir)).filter((e) => !e.startsWith('.')).sort();
  const files: AllowlistFile[] = [];
  for (const key of entries) {
    try {
      files.push({ key, text: await readFile(join(dir, key), 'utf8') });
    } catch (err) {
      // Gone between the listing and the read (a key removed by an update), or a folder.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'EISDIR') throw err;
    }
  }
  return files;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
