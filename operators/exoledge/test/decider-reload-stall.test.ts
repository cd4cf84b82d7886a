/**
 * A reload of a large list must not stop the decider answering: Envoy's ext_authz
 * timeout is 0.25 s, after which a request falls to `failurePolicy`. Selecting, parsing
 * and building half a million prefixes on the request thread blocked it for 160–215 ms
 * on this machine (three million: most of a second); the decider now does that in its
 * list worker, and the request thread only hands the view over and swaps the new table
 * in.
 *
 * Measured with `monitorEventLoopDelay` from the moment the new version is delivered
 * until it is served, for a list of 1.5 million prefixes (about half a second of work on
 * the request thread, more under load). The bound, 150 ms, leaves room for a loaded
 * machine: with the worker, the longest stall seen was 9–60 ms on a quiet machine and
 * up to 104 ms with a whole test suite running beside it (the cores are shared, so a
 * stall also counts time this process was not scheduled).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { ListKind } from '../src/api/blocklist-source.ts';
import type { ObservedConfigMap } from '../src/decider/shard-sets.ts';
import {
  DECIDER_DATA_KEY,
  DECIDER_SHARD_SIZE,
  LABEL_KIND,
  LABEL_SHARD,
  LABEL_SOURCE,
  SHARD_FINGERPRINT_KEY,
  SHARD_TOTAL_KEY,
} from '../src/domain/blocklist-source/publication.ts';
import { BASE_SPEC, DeciderHarness, verdictOf, within } from './support/decider-harness.ts';

/** Prefixes in the reloaded version: enough that building it takes well over the bound. */
const PREFIXES = 1_500_000;
/** The longest the request thread may be blocked at once during the reload. */
const MAX_STALL_MS = 150;

/**
 * The shards of list `proxies` holding `marker` and `count` IPv4 hosts two apart (so none
 * merge) from 11.0.0.0, 5,000 lines a shard as published. Written as text directly: the
 * harness's `shardsOf` parses and merges its entries first, and its garbage (millions of
 * short-lived objects) would be collected in this thread while the stall is measured.
 */
function bigShards(count: number, marker: string): ObservedConfigMap[] {
  const texts: string[] = [];
  let lines: string[] = [`${marker}/32\n`];
  for (let i = 0; i < count; i++) {
    const a = 0x0b000000 + 2 * i;
    lines.push(`${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}/32\n`);
    if (lines.length === DECIDER_SHARD_SIZE) {
      texts.push(lines.join(''));
      lines = [];
    }
  }
  if (lines.length > 0) texts.push(lines.join(''));
  const fingerprint = createHash('sha256').update(texts.join('')).digest('hex');
  return texts.map((text, i) => ({
    name: `blocklist-proxies-${i}`,
    labels: { [LABEL_SOURCE]: 'proxies', [LABEL_SHARD]: String(i), [LABEL_KIND]: ListKind.Presumed },
    data: {
      [DECIDER_DATA_KEY]: text,
      [SHARD_FINGERPRINT_KEY]: fingerprint,
      [SHARD_TOTAL_KEY]: String(texts.length),
    },
  }));
}

describe('decider: reloading a large list', () => {
  it(`never blocks the request thread for more than ${MAX_STALL_MS} ms`, async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(BASE_SPEC);
    h.feed.set(bigShards(1000, '100.64.0.1'));
    const d = await h.start();
    await within(
      5000,
      'the first version served',
      async () => (await verdictOf(d, '100.64.0.1')).verdict === 'pow',
    );
    const next = bigShards(PREFIXES, '100.64.0.2');
    // Let this thread collect what making them left, before measuring.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    // Delivered from a timer, as `KubeShardFeed` delivers, once the monitor runs.
    setTimeout(() => h.feed.set(next), 50);
    const tookMs = await within(
      30_000,
      'the new version served',
      async () => (await verdictOf(d, '100.64.0.2')).verdict === 'pow',
    );
    delay.disable();

    assert.equal((await verdictOf(d, '100.64.0.1')).verdict, 'pass', 'the old version is gone');
    assert.equal((await verdictOf(d, '11.7.161.32')).verdict, 'pow', 'the new version is served whole');
    const stallMs = delay.max / 1e6;
    t.diagnostic(`reload served in ${tookMs} ms; longest stall ${stallMs.toFixed(1)} ms`);
    assert.ok(stallMs < MAX_STALL_MS, `the request thread was blocked ${stallMs.toFixed(1)} ms at once`);
  });
});
