/**
 * A decider for tests: the real process (`runDecider`) on 127.0.0.1 and a free port, its
 * shards fed from memory (or by a feed the test passes: `KubeShardFeed` on an apiserver),
 * its site configuration and allowlists written in a temp folder the way the kubelet
 * writes a ConfigMap volume (a timestamped folder, a `..data` symlink swapped
 * atomically, one symlink per key), and clients for its API.
 *
 * The site configuration is the operator's own `siteConfigText` of an EdgeSite spec, so
 * the decider reads exactly what the operator writes. Shards are the canonical text of
 * each list, cut into ConfigMaps as the publisher labels them.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { pino } from 'pino';
import type { ListKind } from '../../src/api/blocklist-source.ts';
import type { EdgeSiteSpec } from '../../src/api/edge-site.ts';
import { type RunningDecider, runDecider } from '../../src/decider/run.ts';
import { MemoryShardFeed, type ShardFeed } from '../../src/decider/shard-feed.ts';
import type { ObservedConfigMap } from '../../src/decider/shard-sets.ts';
import { canonicalText, merge, parseBlocklist } from '../../src/domain/blocklist/index.ts';
import {
  DECIDER_DATA_KEY,
  LABEL_KIND,
  LABEL_SHARD,
  LABEL_SOURCE,
  SHARD_FINGERPRINT_KEY,
  SHARD_TOTAL_KEY,
} from '../../src/domain/blocklist-source/publication.ts';
import { siteConfigText } from '../../src/domain/edge-site/site-config.ts';

/** A published list: its name, kind and entries (any text a blocklist may hold). */
export interface TestList {
  readonly name: string;
  readonly kind: ListKind;
  readonly entries: readonly string[];
}

/**
 * The shard ConfigMaps of `list`, `shardSize` canonical lines each, named as the
 * publisher names them (so a new version replaces an old one shard by shard).
 */
export function shardsOf(list: TestList, shardSize = 2): ObservedConfigMap[] {
  const parsed = parseBlocklist(list.entries.join('\n'));
  const text = canonicalText(merge(parsed.entries)).toString('latin1');
  const lines = text.split('\n').slice(0, -1);
  const texts: string[] = [];
  for (let i = 0; i < lines.length; i += shardSize) {
    texts.push(
      lines
        .slice(i, i + shardSize)
        .map((l) => `${l}\n`)
        .join(''),
    );
  }
  if (texts.length === 0) texts.push('');
  const fingerprint = createHash('sha256').update(texts.join('')).digest('hex');
  return texts.map((t, i) => ({
    name: `blocklist-${list.name}-${i}`,
    labels: { [LABEL_SOURCE]: list.name, [LABEL_SHARD]: String(i), [LABEL_KIND]: list.kind },
    data: {
      [DECIDER_DATA_KEY]: t,
      [SHARD_FINGERPRINT_KEY]: fingerprint,
      [SHARD_TOTAL_KEY]: String(texts.length),
    },
  }));
}

let swaps = 0;

/**
 * Writes `files` into the ConfigMap volume at `dir` as the kubelet does: a new folder,
 * `..data` swapped to it by a rename, each key a symlink through `..data`.
 */
export async function writeVolume(dir: string, files: Readonly<Record<string, string>>): Promise<void> {
  await mkdir(dir, { recursive: true });
  const version = `..${Date.now()}_${process.pid}_${++swaps}`;
  await mkdir(join(dir, version));
  for (const [key, text] of Object.entries(files)) await writeFile(join(dir, version, key), text);
  await symlink(version, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const key of Object.keys(files)) {
    await symlink(join('..data', key), join(dir, key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
}

/** The smallest spec the operator accepts; tests add what they exercise. */
export const BASE_SPEC: EdgeSiteSpec = {
  domains: ['shop.example.com'],
  upstream: { name: 'shop', port: 80 },
};

export interface StartOptions {
  readonly valkeyUrl?: string;
  readonly trustedHops?: number;
  readonly clientAddressHeader?: string;
  /** As `EXOLEDGE_SIGNING_KEYS` gives them; none: the key Valkey shares. */
  readonly signingKeys?: readonly string[];
  readonly captchaSecret?: string;
  readonly captchaVerifyUrl?: string;
  /** Shards from elsewhere than `feed` (a `KubeShardFeed` on an apiserver); `feed` by default. */
  readonly feed?: ShardFeed;
  /** The namespace such a feed reads, for the settings; `exoledge-system` by default. */
  readonly shardNamespace?: string;
}

export interface Verdict {
  readonly verdict: string;
  readonly reason: string;
  readonly list?: string;
}

export class DeciderHarness {
  readonly feed = new MemoryShardFeed();
  readonly dir: string;
  readonly #running = new Set<RunningDecider>();

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** A harness whose deciders and folder go when `t` ends. */
  static async create(t: Pick<TestContext, 'after'>): Promise<DeciderHarness> {
    const h = new DeciderHarness(await mkdtemp(join(tmpdir(), 'exoledge-decider-')));
    t.after(async () => {
      await Promise.all([...h.#running].map((r) => r.close()));
      await rm(h.dir, { recursive: true, force: true });
    });
    return h;
  }

  get configDir(): string {
    return join(this.dir, 'site');
  }

  get allowlistsDir(): string {
    return join(this.dir, 'allowlists');
  }

  /** Writes the site configuration the operator writes for `spec`. */
  async writeSpec(spec: EdgeSiteSpec): Promise<void> {
    await writeVolume(this.configDir, { 'config.json': siteConfigText(spec) });
  }

  /** Writes the site configuration file as given, well-formed or not. */
  async writeConfigText(text: string): Promise<void> {
    await writeVolume(this.configDir, { 'config.json': text });
  }

  async writeAllowlist(name: string, files: Readonly<Record<string, string>>): Promise<void> {
    await writeVolume(join(this.allowlistsDir, name), files);
  }

  /** Publishes `lists` all at once. */
  publish(...lists: readonly TestList[]): void {
    this.feed.set(lists.flatMap((l) => shardsOf(l)));
  }

  async start(options: StartOptions = {}): Promise<RunningDecider> {
    const running = await runDecider({
      settings: {
        siteNamespace: 'shop',
        site: 'shop',
        siteConfigPath: join(this.configDir, 'config.json'),
        shardNamespace: options.shardNamespace ?? 'exoledge-system',
        allowlistsDir: this.allowlistsDir,
        listen: { host: '127.0.0.1', port: 0 },
        valkeyUrl: options.valkeyUrl,
        trustedHops: options.trustedHops ?? 0,
        clientAddressHeader: options.clientAddressHeader,
        signingKeys: (options.signingKeys ?? []).map((k) => Buffer.from(k, 'utf8')),
        captchaSecret: options.captchaSecret,
        captchaVerifyUrl: options.captchaVerifyUrl,
      },
      feed: options.feed ?? this.feed,
      log: pino({ level: process.env.DECIDER_TEST_LOG ?? 'silent' }),
      pollIntervalMs: 100,
    });
    this.#running.add(running);
    // Lists are applied off the request thread: a test starts from the view it published.
    await running.decider.shardsSettled();
    const close = running.close;
    return {
      ...running,
      close: async () => {
        this.#running.delete(running);
        await close();
      },
    };
  }
}

/** `GET /v1/verdict?addr=`, the JSON verdict. */
export async function verdictOf(
  running: Pick<RunningDecider, 'url'>,
  addr: string,
  headers: Record<string, string> = {},
): Promise<Verdict> {
  const res = await fetch(`${running.url}/v1/verdict?addr=${encodeURIComponent(addr)}`, { headers });
  const body = (await res.json()) as Verdict;
  if (res.status !== 200)
    throw new Error(`GET /v1/verdict?addr=${addr}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** What ext_authz sees: the status and the verdict header. */
export async function extAuthz(
  running: Pick<RunningDecider, 'url'>,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; verdict: string | null; reason: string | null }> {
  const res = await fetch(`${running.url}/v1/verdict${path}`, { method, headers, redirect: 'manual' });
  await res.arrayBuffer();
  return {
    status: res.status,
    verdict: res.headers.get('x-exoledge-verdict'),
    reason: res.headers.get('x-exoledge-reason'),
  };
}

/** Polls `fn` every 20 ms until it returns true, or fails with `what` after `timeoutMs`. */
export async function within(timeoutMs: number, what: string, fn: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await fn()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
