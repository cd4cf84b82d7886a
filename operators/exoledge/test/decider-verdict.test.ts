/**
 * The verdict table, held to an oracle written another way: each row a literal entry of
 * an ordered list of rules, and the challenge kind a literal lookup table over (posture,
 * captcha, challenge filter), with nothing shared with `decide` but the input.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ListKind } from '../src/api/blocklist-source.ts';
import { Posture } from '../src/api/edge-site.ts';
import {
  CHALLENGE_FLOOD_THRESHOLD,
  type ClientState,
  type Decision,
  decide,
  type ListHit,
  stateWanted,
  type VerdictInput,
  type VerdictPolicy,
} from '../src/domain/decider/verdict.ts';
import type { BlocklistSelection } from '../src/domain/edge-site/security.ts';

/** What a listed client is asked, by `posture/captcha/challenge filter`. */
const CHALLENGE: Readonly<Record<string, 'pow' | 'captcha' | 'pass'>> = {
  'Challenge/no-captcha/filter': 'pow',
  'Challenge/captcha/filter': 'pow',
  'Strict/no-captcha/filter': 'pow',
  'Strict/captcha/filter': 'captcha',
  'Challenge/no-captcha/no-filter': 'pass',
  'Challenge/captcha/no-filter': 'pass',
  'Strict/no-captcha/no-filter': 'pass',
  'Strict/captcha/no-filter': 'captcha',
};

/** Extra zero bits by challenge count, as literal bands: 121-239 one, then one per doubling, at most 4. */
function floodBits(count: number): number {
  if (count <= 120) return 0;
  if (count < 240) return 1;
  if (count < 480) return 2;
  if (count < 960) return 3;
  return 4;
}

function oracle(input: VerdictInput): Decision {
  const { policy, state } = input;
  const sorted = [...input.lists].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const certain = sorted.find((l) => l.kind === 'Certain')?.name;
  const selected = (name: string): boolean =>
    policy.blocklists.kind === 'AllPresumed' || policy.blocklists.names.includes(name);
  const presumed = sorted.find((l) => l.kind === 'Presumed' && selected(l.name))?.name;
  const asked =
    CHALLENGE[
      `${policy.posture}/${policy.captcha ? 'captcha' : 'no-captcha'}/${policy.challenge ? 'filter' : 'no-filter'}`
    ];
  const rules: [boolean, Decision][] = [
    [input.allowlisted, { verdict: 'pass', reason: 'Allowlisted' }],
    [certain !== undefined, { verdict: 'drop', reason: 'CertainListed', list: certain! }],
    [presumed === undefined, { verdict: 'pass', reason: 'NotListed' }],
    [policy.posture === 'Observe', { verdict: 'pass', reason: 'ListedObserved', list: presumed! }],
    [asked === 'pass', { verdict: 'pass', reason: 'ChallengeOff', list: presumed! }],
    [state.kind === 'cleared', { verdict: 'pass', reason: 'Cleared', list: presumed! }],
    [
      state.kind === 'challenged' && state.count > 120 && asked === 'pow',
      {
        verdict: 'pow',
        reason: 'ChallengeFlood',
        list: presumed!,
        extraBits: floodBits(state.kind === 'challenged' ? state.count : 0),
      },
    ],
    [true, { verdict: asked as 'pow' | 'captcha', reason: 'PresumedListed', list: presumed! }],
  ];
  return rules.find(([applies]) => applies)![1];
}

const NAMES = ['proxies', 'tor', 'scanners', 'cve', 'vpn'];

const listHit: fc.Arbitrary<ListHit> = fc.record({
  name: fc.constantFrom(...NAMES),
  kind: fc.constantFrom<ListKind>(ListKind.Certain, ListKind.Presumed),
});
const selection: fc.Arbitrary<BlocklistSelection> = fc.oneof(
  fc.constant({ kind: 'AllPresumed' as const }),
  fc.record({ kind: fc.constant('Named' as const), names: fc.subarray(NAMES) }),
);
const policy: fc.Arbitrary<VerdictPolicy> = fc.record({
  posture: fc.constantFrom<Posture>(Posture.Observe, Posture.Challenge, Posture.Strict),
  captcha: fc.boolean(),
  challenge: fc.boolean(),
  blocklists: selection,
});
const state: fc.Arbitrary<ClientState> = fc.oneof(
  fc.constant({ kind: 'cleared' as const }),
  fc.record({ kind: fc.constant('challenged' as const), count: fc.integer({ min: 1, max: 20_000 }) }),
  fc.constant({ kind: 'unavailable' as const }),
  fc.constant({ kind: 'notRead' as const }),
);
const input: fc.Arbitrary<VerdictInput> = fc.record({
  allowlisted: fc.boolean(),
  // Unique names: one table holds a list once.
  lists: fc.uniqueArray(listHit, { selector: (l) => l.name, maxLength: 4 }),
  policy,
  state,
});

const base: Omit<VerdictInput, 'state'> = {
  allowlisted: false,
  lists: [{ name: 'proxies', kind: ListKind.Presumed }],
  policy: {
    posture: Posture.Challenge,
    captcha: false,
    challenge: true,
    blocklists: { kind: 'AllPresumed' },
  },
};

describe('decide', () => {
  it('agrees with the oracle on every input', () => {
    fc.assert(
      fc.property(input, (i) => {
        assert.deepEqual(decide(i), oracle(i));
      }),
      { numRuns: 5000 },
    );
  });

  it('does not depend on the client state whenever stateWanted says so', () => {
    fc.assert(
      fc.property(input, state, (i, other) => {
        fc.pre(!stateWanted(i));
        assert.deepEqual(decide({ ...i, state: other }), decide(i));
      }),
      { numRuns: 3000 },
    );
  });

  it('never drops a client that is in no Certain list, however many challenges it was sent', () => {
    fc.assert(
      fc.property(input, (i) => {
        fc.pre(!i.lists.some((l) => l.kind === ListKind.Certain));
        assert.notEqual(decide(i).verdict, 'drop');
      }),
      { numRuns: 3000 },
    );
  });

  it('10,000 challenges from one Presumed address in a window: every one a challenge, none a drop', () => {
    for (const policy of [base.policy, { ...base.policy, posture: Posture.Strict, captcha: true }]) {
      for (let count = 1; count <= 10_000; count++) {
        const d = decide({ ...base, policy, state: { kind: 'challenged', count } });
        assert.ok(d.verdict === 'pow' || d.verdict === 'captcha', `challenge ${count}: ${d.verdict}`);
      }
    }
  });

  it('passes an allowlisted address even when a Certain list holds it', () => {
    const d = decide({
      ...base,
      allowlisted: true,
      lists: [{ name: 'scanners', kind: ListKind.Certain }],
      state: { kind: 'notRead' },
    });
    assert.deepEqual(d, { verdict: 'pass', reason: 'Allowlisted' });
  });

  it('drops a Certain list whatever the posture and the selection, and a clearance does not help', () => {
    for (const posture of [Posture.Observe, Posture.Challenge, Posture.Strict]) {
      const d = decide({
        allowlisted: false,
        lists: [{ name: 'scanners', kind: ListKind.Certain }],
        policy: { ...base.policy, posture, blocklists: { kind: 'Named', names: [] } },
        state: { kind: 'cleared' },
      });
      assert.deepEqual(d, { verdict: 'drop', reason: 'CertainListed', list: 'scanners' }, posture);
    }
  });

  it("asks the site's work up to the 120th challenge of a window, then one more bit per doubling, at most 4", () => {
    const at = (count: number) => decide({ ...base, state: { kind: 'challenged', count } });
    assert.equal(CHALLENGE_FLOOD_THRESHOLD, 120);
    assert.deepEqual(at(120), { verdict: 'pow', reason: 'PresumedListed', list: 'proxies' });
    const flood = (extraBits: number) => ({
      verdict: 'pow',
      reason: 'ChallengeFlood',
      list: 'proxies',
      extraBits,
    });
    assert.deepEqual(at(121), flood(1));
    assert.deepEqual(at(240), flood(2));
    assert.deepEqual(at(959), flood(3));
    assert.deepEqual(at(10_000), flood(4));
  });

  it('challenges a listed client when Valkey is unavailable, as if it had no token', () => {
    assert.deepEqual(decide({ ...base, state: { kind: 'unavailable' } }), {
      verdict: 'pow',
      reason: 'PresumedListed',
      list: 'proxies',
    });
  });

  it('asks Valkey only about clients in a selected Presumed list that would be challenged', () => {
    assert.equal(stateWanted(base), true);
    assert.equal(stateWanted({ ...base, lists: [] }), false);
    assert.equal(stateWanted({ ...base, policy: { ...base.policy, posture: Posture.Observe } }), false);
    assert.equal(
      stateWanted({ ...base, policy: { ...base.policy, blocklists: { kind: 'Named', names: [] } } }),
      false,
    );
    assert.equal(stateWanted({ ...base, policy: { ...base.policy, challenge: false } }), false);
  });
});
