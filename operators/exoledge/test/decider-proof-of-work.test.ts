/**
 * The proof-of-work and the clearance cookie, pure. Answers are found by a solver written
 * here from the protocol's definition (node:crypto's SHA-256, bits counted from a binary
 * string), not with the module's own helpers.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  clearanceCookie,
  issueClearance,
  readClearanceCookie,
  verifyClearance,
} from '../src/domain/decider/clearance.ts';
import {
  checkSolution,
  leadingZeroBits,
  mintNonce,
  NONCE_TTL_SECONDS,
} from '../src/domain/decider/proof-of-work.ts';

const KEY = Buffer.alloc(32, 7);
const NOW = 1_750_000_000;
const RANDOM = Buffer.alloc(16, 1);

/** Zero bits at the start of SHA-256(`nonce` + `counter`), read from the digest as a binary string. */
function zeros(nonce: string, counter: number): number {
  const bits = [...createHash('sha256').update(`${nonce}${counter}`).digest()]
    .map((b) => b.toString(2).padStart(8, '0'))
    .join('');
  return bits.indexOf('1') < 0 ? bits.length : bits.indexOf('1');
}

function solve(nonce: string, difficulty: number): number {
  let counter = 0;
  while (zeros(nonce, counter) < difficulty) counter++;
  return counter;
}

const mint = (client = '192.0.2.1', difficulty = 8) =>
  mintNonce({ key: KEY, client, difficulty, now: NOW, random: RANDOM });

const check = (
  nonce: unknown,
  counter: unknown,
  over: Partial<{ client: string; now: number; difficulty: number; key: Buffer }> = {},
) => checkSolution({ key: KEY, client: '192.0.2.1', nonce, counter, now: NOW + 10, difficulty: 8, ...over });

describe('proof-of-work', () => {
  it('counts leading zero bits as the binary digest shows them', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 8 }), (bytes) => {
        const bits = [...bytes].map((b) => b.toString(2).padStart(8, '0')).join('');
        const expected = bits.indexOf('1') < 0 ? bits.length : bits.indexOf('1');
        assert.equal(leadingZeroBits(bytes), expected);
      }),
    );
  });

  it('accepts a solved nonce from the client it was made for, and says until when to remember it', () => {
    const nonce = mint();
    const result = check(nonce, solve(nonce, 8));
    assert.deepEqual(result, { ok: true, nonceId: nonce.split('.')[3], expires: NOW + NONCE_TTL_SECONDS });
  });

  it('refuses a nonce made for another client, under another key, or altered in any field', () => {
    const nonce = mint();
    const counter = solve(nonce, 8);
    const reasons = [
      check(nonce, counter, { client: '192.0.2.2' }),
      check(nonce, counter, { key: Buffer.alloc(32, 8) }),
      ...[0, 1, 2].map((field) => {
        const parts = nonce.split('.');
        parts[field] = field === 0 ? 'AAAAAAAAAAAAAAAAAAAAAA' : String(Number(parts[field]) + 1);
        return check(parts.join('.'), counter);
      }),
    ].map((r) => (r.ok ? 'accepted' : r.reason));
    assert.deepEqual(reasons, Array(5).fill('ForgedNonce'));
  });

  it('refuses an expired nonce, one easier than the site asks now, and unfinished work', () => {
    const nonce = mint();
    const counter = solve(nonce, 8);
    const reason = (r: ReturnType<typeof check>) => (r.ok ? 'accepted' : r.reason);
    assert.equal(reason(check(nonce, counter, { now: NOW + NONCE_TTL_SECONDS + 1 })), 'ExpiredNonce');
    assert.equal(reason(check(nonce, counter, { difficulty: 9 })), 'DifficultyRaised');
    let wrong = 0;
    while (zeros(nonce, wrong) >= 8) wrong++;
    assert.equal(reason(check(nonce, wrong)), 'InsufficientWork');
    for (const bad of [-1, 1.5, '12', null]) assert.equal(reason(check(nonce, bad)), 'MalformedCounter');
    for (const bad of [42, 'a.b.c', `${nonce}.x`, 'x'.repeat(300)])
      assert.equal(reason(check(bad, counter)), 'MalformedNonce');
  });

  it('accepts a harder nonce than the site asks now', () => {
    const nonce = mint('192.0.2.1', 10);
    assert.equal(check(nonce, solve(nonce, 10)).ok, true);
  });
});

describe('clearance token: signed, expiring, checked with no store', () => {
  const issue = (client = '192.0.2.1', seconds = 600, key: Buffer = KEY) =>
    issueClearance({ key, client, now: NOW, seconds, random: Buffer.alloc(12, 3) });

  it('is v1.<expires>.<random>.<HMAC-SHA256 of them and the client key>, as written out here', () => {
    const random = Buffer.alloc(12, 3).toString('base64url');
    const mac = createHmac('sha256', KEY)
      .update(`exoledge-clearance-v1\n${NOW + 600}\n${random}\n192.0.2.1`)
      .digest('base64url');
    assert.equal(issue(), `v1.${NOW + 600}.${random}.${mac}`);
  });

  it('is valid for its client until it expires, under the key or a key kept for rotation', () => {
    const token = issue();
    assert.equal(verifyClearance([KEY], '192.0.2.1', token, NOW + 600), true);
    assert.equal(verifyClearance([Buffer.alloc(32, 9), KEY], '192.0.2.1', token, NOW), true);
    assert.equal(verifyClearance([KEY], '192.0.2.1', token, NOW + 601), false, 'expired');
    assert.equal(verifyClearance([KEY], '192.0.2.2', token, NOW), false, 'another client');
    assert.equal(verifyClearance([Buffer.alloc(32, 9)], '192.0.2.1', token, NOW), false, 'another key');
  });

  it("is refused when any character is changed (but the MAC's last, whose low bits base64 ignores)", () => {
    const token = issue();
    fc.assert(
      fc.property(
        fc.nat({ max: token.length - 2 }),
        fc.constantFrom('0', '9', 'A', '_', '-', 'z'),
        (i, c) => {
          fc.pre(token[i] !== c);
          const altered = token.slice(0, i) + c + token.slice(i + 1);
          assert.equal(verifyClearance([KEY], '192.0.2.1', altered, NOW), false, altered);
        },
      ),
    );
  });
});

describe('clearance cookie', () => {
  const token = issueClearance({
    key: KEY,
    client: '192.0.2.1',
    now: NOW,
    seconds: 60,
    random: RANDOM.subarray(0, 12),
  });

  it('is read among other cookies, and ignored when it is not a token', () => {
    assert.equal(readClearanceCookie(`a=1; exoledge_clearance=${token}; b=2`), token);
    assert.equal(readClearanceCookie(`exoledge_clearance="${token}"`), token);
    assert.equal(readClearanceCookie('exoledge_clearance=short'), undefined);
    assert.equal(readClearanceCookie(`exoledge_clearance=${token}:extra`), undefined);
    assert.equal(readClearanceCookie(`not_exoledge_clearance=${token}`), undefined);
    assert.equal(readClearanceCookie(undefined), undefined);
  });

  it('is set HttpOnly, Secure, SameSite=Lax, for the whole site, for the clearance duration', () => {
    assert.equal(
      clearanceCookie(token, 3600),
      `exoledge_clearance=${token}; Path=/; Max-Age=3600; HttpOnly; Secure; SameSite=Lax`,
    );
  });
});
