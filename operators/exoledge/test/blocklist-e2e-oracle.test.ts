/**
 * The end-to-end tests' oracle (`support/oracle.ts`) checked against cases worked out by
 * hand, so that an expectation it computes is worth trusting.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  applyBudget,
  blockText,
  canonicalText,
  expectedSet,
  fingerprintOf,
  mergeBlocks,
  parseList,
  uncovered,
} from './support/oracle.ts';

const texts = (list: string) => mergeBlocks(parseList(list)).map(blockText);

describe('the end-to-end oracle', () => {
  it('reads addresses and prefixes, clears host bits, skips comments, blanks and junk', () => {
    assert.deepEqual(
      parseList('# c\n1.2.3.77/24 ; x\n\n  10.0.0.1  \n1.2.3\n<html>\n2001:DB8::1/64\n').map(blockText),
      ['1.2.3.0/24', '10.0.0.1/32', '2001:db8::/64'],
    );
  });

  it('merges neighbours and overlaps into the fewest blocks, IPv4 before IPv6', () => {
    assert.deepEqual(texts('10.0.1.0/24\n10.0.0.0/24\n10.0.2.0/23\n10.0.0.5\n'), ['10.0.0.0/22']);
    assert.deepEqual(texts('2001:db8::/120\n10.0.0.1\n10.0.0.2\n'), [
      '10.0.0.1/32',
      '10.0.0.2/32',
      '2001:db8::/120',
    ]);
    // 10.0.0.1 to 10.0.0.6: /32, /31, /31, /32.
    assert.deepEqual(texts('10.0.0.1\n10.0.0.2/31\n10.0.0.4/31\n10.0.0.6\n'), [
      '10.0.0.1/32',
      '10.0.0.2/31',
      '10.0.0.4/31',
      '10.0.0.6/32',
    ]);
    assert.deepEqual(texts('0.0.0.0/1\n128.0.0.0/1\n'), ['0.0.0.0/0']);
    assert.deepEqual(texts('255.255.255.255\n::\n::1\n'), ['255.255.255.255/32', '::/127']);
  });

  it('writes IPv6 as RFC 5952 says: lower case, the longest zero run compressed, the first of equals', () => {
    assert.deepEqual(texts('2001:0db8:0:0:1:0:0:1\n'), ['2001:db8::1:0:0:1/128']);
    assert.deepEqual(texts('2001:db8:0:1:0:0:0:1\n'), ['2001:db8:0:1::1/128']);
    assert.deepEqual(texts('2001:db8:0:1:1:1:1:1\n'), ['2001:db8:0:1:1:1:1:1/128']);
    assert.deepEqual(texts('fe80::\n'), ['fe80::/128']);
  });

  it('budgets as the docs say: too long first, then the smallest blocks, IPv6 first at equal size, highest first', () => {
    const merged = mergeBlocks(
      parseList('10.1.0.0/22\n10.2.0.0/24\n10.3.0.0/24\n10.4.0.1\n2001:db8::/120\n2001:db8::1:0/121\n'),
    );
    const r = applyBudget(merged, { minPrefixLength: 24, maxEntries: 2 });
    assert.deepEqual(r.droppedByLength.map(blockText), ['10.4.0.1/32', '2001:db8::1:0/121']);
    assert.deepEqual(r.droppedByCount.map(blockText), ['2001:db8::/120', '10.3.0.0/24']);
    assert.deepEqual(r.kept.map(blockText), ['10.1.0.0/22', '10.2.0.0/24']);
  });

  it('fingerprints the canonical text with SHA-256, as sha256sum would', () => {
    const blocks = mergeBlocks(parseList('10.0.0.0/24\n::1\n'));
    assert.equal(canonicalText(blocks), '10.0.0.0/24\n::1/128\n');
    assert.equal(fingerprintOf(blocks), createHash('sha256').update('10.0.0.0/24\n::1/128\n').digest('hex'));
    assert.equal(
      expectedSet('').fingerprint,
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });

  it('finds an address one union does not hold of another, and none when it holds them all', () => {
    const must = parseList('10.0.0.0/23\n');
    assert.equal(uncovered(must, parseList('10.0.0.0/24\n10.0.1.0/24\n')), undefined);
    assert.equal(uncovered(must, parseList('10.0.0.0/24\n10.0.1.128/25\n')), '10.0.1.0');
    assert.equal(uncovered(must, parseList('10.0.0.0/22\n')), undefined);
    assert.equal(uncovered(parseList('2001:db8::/127\n'), parseList('2001:db8::\n')), '2001:db8::1');
  });
});
