/**
 * shard and fingerprint: the published set cut into objects of at most shardSize
 * prefixes, and named by the SHA-256 of its canonical text.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalStrings, canonicalText, fingerprint, merge, parseBlocklist, shard } from '../src/index.ts';
import { crowdedMixedPrefixes, listOf } from './blocklist-support.ts';

describe('shard', () => {
  it('cuts the canonical list into consecutive shards of shardSize, the last one shorter', () => {
    fc.assert(
      fc.property(crowdedMixedPrefixes(), fc.integer({ min: 1, max: 25 }), (input, size) => {
        const list = merge(listOf(input));
        const shards = shard(list, size);
        assert.deepEqual(
          shards.flatMap((s) => s.prefixes),
          canonicalStrings(list),
        );
        assert.deepEqual(
          shards.map((s) => s.index),
          shards.map((_, i) => i),
        );
        for (const s of shards.slice(0, -1)) assert.equal(s.prefixes.length, size);
        const last = shards.at(-1);
        if (last !== undefined) assert.ok(last.prefixes.length >= 1 && last.prefixes.length <= size);
        assert.equal(shards.length, Math.ceil(canonicalStrings(list).length / size));
      }),
    );
  });

  it('makes no shard of an empty list', () => {
    assert.deepEqual(shard(merge(parseBlocklist('').entries), 10), []);
  });

  it('refuses a shard size below 1', () => {
    assert.throws(() => shard(merge(parseBlocklist('1.2.3.4').entries), 0), RangeError);
  });
});

describe('fingerprint', () => {
  it('is the SHA-256 of the canonical text, as `sha256sum` of the CLI output gives it', () => {
    const list = merge(parseBlocklist('1.2.3.4\n2001:db8::/32\n').entries);
    assert.equal(canonicalText(list).toString(), '1.2.3.4/32\n2001:db8::/32\n');
    assert.equal(fingerprint(list), createHash('sha256').update('1.2.3.4/32\n2001:db8::/32\n').digest('hex'));
  });

  it('depends on the address set only, not on how the list was written', () => {
    const a = merge(parseBlocklist('10.0.0.0/24\n10.0.1.0/24\n# note\n').entries);
    const b = merge(parseBlocklist(' 10.0.1.77/24 ; again\r\n10.0.0.0/23\n10.0.0.1\n').entries);
    assert.equal(fingerprint(a), fingerprint(b));
  });

  it('changes when one address changes', () => {
    fc.assert(
      fc.property(crowdedMixedPrefixes(), crowdedMixedPrefixes(), (x, y) => {
        const a = merge(listOf(x));
        const b = merge(listOf(y));
        const same = canonicalStrings(a).join() === canonicalStrings(b).join();
        assert.equal(fingerprint(a) === fingerprint(b), same);
      }),
    );
  });
});
