/**
 * A team's escalation policy (DESIGN §4.3, §5): the spec becomes the server's policy
 * (usernames to IDs, durations to seconds); a PUT only when it differs from the server's
 * copy, an absent and an empty fallback topic being one; one rule per team holds the
 * policy — the oldest by creationTimestamp, then name — and a rule being deleted yields.
 * Oracles: a JSON-normalised comparison, and a minimum by parsed time and code-unit name.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { TerdutEscalationRuleSpec } from '../src/api/terdut-escalation-rule.ts';
import type { EscalationPolicy, PolicyTarget, User } from '../src/client/terdut-api.ts';
import {
  desiredPolicy,
  EMPTY_POLICY,
  policyHolder,
  type RuleIdentity,
  samePolicy,
} from '../src/domain/escalation.ts';

type Level = EscalationPolicy['levels'][number];

/** A policy as text, with an absent fallback topic written as "". */
const normalised = (p: EscalationPolicy): string =>
  JSON.stringify([
    p.repeat_count,
    p.fallback_topic ?? '',
    p.levels.map((l) => [
      l.timeout_seconds,
      l.targets.map((t) => (t.kind === 'oncall' ? ['oncall'] : ['user', t.user_id])),
    ]),
  ]);

const target: fc.Arbitrary<PolicyTarget> = fc.oneof(
  fc.constant({ kind: 'oncall' as const }),
  fc.record({ kind: fc.constant('user' as const), user_id: fc.constantFrom(1, 2) }),
);
const level: fc.Arbitrary<Level> = fc.record({
  timeout_seconds: fc.constantFrom(60, 300),
  targets: fc.array(target, { maxLength: 3 }),
});
const policy: fc.Arbitrary<EscalationPolicy> = fc.record(
  {
    repeat_count: fc.constantFrom(0, 1, 2),
    fallback_topic: fc.constantFrom('', 'platform', 'infra'),
    levels: fc.array(level, { maxLength: 3 }),
  },
  { requiredKeys: ['repeat_count', 'levels'] },
);

/** The same policy written another way: a deep copy, its fallback topic "" and absent swapped. */
function rewritten(p: EscalationPolicy): EscalationPolicy {
  const copy: EscalationPolicy = structuredClone(p);
  const topic = p.fallback_topic ?? '';
  if (topic !== '') return copy;
  return p.fallback_topic === undefined
    ? { ...copy, fallback_topic: '' }
    : { repeat_count: copy.repeat_count, levels: copy.levels };
}

/** One small change somewhere (which may or may not make the policy differ). */
const mutated = (p: EscalationPolicy): fc.Arbitrary<EscalationPolicy> =>
  fc.tuple(fc.nat(), fc.nat(), fc.constantFrom(0, 1, 2, 3, 4, 5, 6)).map(([i, j, what]) => {
    const levels = p.levels.map((l) => ({ timeout_seconds: l.timeout_seconds, targets: [...l.targets] }));
    const l = levels.length ? levels[i % levels.length] : undefined;
    switch (what) {
      case 0:
        return { ...p, levels, repeat_count: p.repeat_count + 1 };
      case 1:
        return { ...p, levels, fallback_topic: (p.fallback_topic ?? '') === '' ? 'other' : '' };
      case 2:
        if (l) l.timeout_seconds += 1;
        return { ...p, levels };
      case 3:
        if (l) l.targets.splice(j % (l.targets.length + 1), 1);
        return { ...p, levels };
      case 4:
        if (l?.targets.length) {
          const k = j % l.targets.length;
          const t = l.targets[k];
          l.targets[k] = t?.kind === 'user' ? { kind: 'oncall' } : { kind: 'user', user_id: 1 };
        }
        return { ...p, levels };
      case 5: {
        const k = l?.targets.findIndex((t) => t.kind === 'user') ?? -1;
        const t = l?.targets[k];
        if (l && t?.kind === 'user') l.targets[k] = { kind: 'user', user_id: t.user_id === 1 ? 2 : 1 };
        return { ...p, levels };
      }
      default:
        return { ...p, levels: levels.slice(1) };
    }
  });

const pair: fc.Arbitrary<[EscalationPolicy, EscalationPolicy]> = fc.oneof(
  fc.tuple(policy, policy),
  policy.chain((p) => fc.tuple(fc.constant(p), fc.constant(rewritten(p)))),
  policy.chain((p) => fc.tuple(fc.constant(p), mutated(p))),
);

describe('the desired policy from a rule', () => {
  const users: User[] = [
    { id: 7, username: 'alice' },
    { id: 9, username: 'bob' },
  ];
  const spec = (over: Partial<TerdutEscalationRuleSpec> = {}): TerdutEscalationRuleSpec => ({
    teamRef: { name: 'platform-team' },
    repeatCount: 2,
    fallbackTopic: 'platform-oncall',
    levels: [
      { timeout: '5m', targets: [{ kind: 'oncall' }, { kind: 'user', username: 'alice' }] },
      { timeout: '15m', targets: [{ kind: 'oncall' }] },
    ],
    ...over,
  });

  it('turns the design’s example into the server’s policy, usernames as IDs and timeouts as seconds', () => {
    assert.deepEqual(desiredPolicy(spec(), users), {
      kind: 'Policy',
      policy: {
        repeat_count: 2,
        fallback_topic: 'platform-oncall',
        levels: [
          { timeout_seconds: 300, targets: [{ kind: 'oncall' }, { kind: 'user', user_id: 7 }] },
          { timeout_seconds: 900, targets: [{ kind: 'oncall' }] },
        ],
      },
    });
  });

  it('gives 5m and 300s the same policy, so rewriting a timeout does not PUT', () => {
    const a = desiredPolicy(spec(), users);
    const b = desiredPolicy(
      spec({
        levels: [
          { timeout: '300s', targets: [{ kind: 'oncall' }, { kind: 'user', username: 'alice' }] },
          { timeout: '900000ms', targets: [{ kind: 'oncall' }] },
        ],
      }),
      users,
    );
    assert.equal(a.kind, 'Policy');
    assert.equal(b.kind, 'Policy');
    if (a.kind === 'Policy' && b.kind === 'Policy') assert.equal(samePolicy(a.policy, b.policy), true);
  });

  it('defaults repeatCount to 0 and leaves out an empty fallback topic', () => {
    assert.deepEqual(
      desiredPolicy(
        {
          teamRef: { name: 't' },
          fallbackTopic: '',
          levels: [{ timeout: '1m', targets: [{ kind: 'oncall' }] }],
        },
        [],
      ),
      {
        kind: 'Policy',
        policy: { repeat_count: 0, levels: [{ timeout_seconds: 60, targets: [{ kind: 'oncall' }] }] },
      },
    );
  });

  it('names every unknown user once, sorted, instead of applying a partial policy', () => {
    const got = desiredPolicy(
      spec({
        levels: [
          {
            timeout: '5m',
            targets: [
              { kind: 'user', username: 'zoe' },
              { kind: 'user', username: 'alice' },
            ],
          },
          {
            timeout: '5m',
            targets: [
              { kind: 'user', username: 'carol' },
              { kind: 'user', username: 'zoe' },
            ],
          },
        ],
      }),
      users,
    );
    assert.deepEqual(got, { kind: 'UnknownUsers', usernames: ['carol', 'zoe'] });
  });

  it('refuses a level whose timeout is not a positive duration, naming the level', () => {
    for (const timeout of ['soon', '0s', '0', '', '5']) {
      const got = desiredPolicy(
        spec({
          levels: [
            { timeout: '5m', targets: [{ kind: 'oncall' }] },
            { timeout, targets: [{ kind: 'oncall' }] },
          ],
        }),
        users,
      );
      assert.deepEqual(got, { kind: 'InvalidDuration', level: 1, timeout }, timeout);
    }
  });

  it('rounds a sub-second timeout up to a whole second', () => {
    const got = desiredPolicy(
      spec({ levels: [{ timeout: '1500ms', targets: [{ kind: 'oncall' }] }] }),
      users,
    );
    assert.equal(got.kind === 'Policy' ? got.policy.levels[0]?.timeout_seconds : undefined, 2);
  });

  it('leaves, on deletion, a policy with no levels and no repeats', () => {
    assert.deepEqual(EMPTY_POLICY, { repeat_count: 0, levels: [] });
  });
});

describe('comparing policies', () => {
  it('takes an absent and an empty fallback topic as the same', () => {
    const base: EscalationPolicy = {
      repeat_count: 1,
      levels: [{ timeout_seconds: 60, targets: [{ kind: 'oncall' }] }],
    };
    assert.equal(samePolicy(base, { ...base, fallback_topic: '' }), true);
    assert.equal(samePolicy({ ...base, fallback_topic: '' }, base), true);
    assert.equal(samePolicy(base, { ...base, fallback_topic: 'x' }), false);
  });

  it('tells targets apart: another user, or the on-call instead of a user, is another policy', () => {
    const with_ = (t: PolicyTarget): EscalationPolicy => ({
      repeat_count: 0,
      levels: [{ timeout_seconds: 60, targets: [t] }],
    });
    assert.equal(samePolicy(with_({ kind: 'user', user_id: 7 }), with_({ kind: 'user', user_id: 7 })), true);
    assert.equal(samePolicy(with_({ kind: 'user', user_id: 7 }), with_({ kind: 'user', user_id: 9 })), false);
    assert.equal(samePolicy(with_({ kind: 'user', user_id: 7 }), with_({ kind: 'oncall' })), false);
    assert.equal(samePolicy(with_({ kind: 'oncall' }), with_({ kind: 'user', user_id: 7 })), false);
  });

  it('counts the order of levels and of targets', () => {
    const oncall: PolicyTarget = { kind: 'oncall' };
    const alice: PolicyTarget = { kind: 'user', user_id: 7 };
    const a: EscalationPolicy = {
      repeat_count: 0,
      levels: [{ timeout_seconds: 60, targets: [oncall, alice] }],
    };
    const b: EscalationPolicy = {
      repeat_count: 0,
      levels: [{ timeout_seconds: 60, targets: [alice, oncall] }],
    };
    assert.equal(samePolicy(a, b), false);
    const c: EscalationPolicy = {
      repeat_count: 0,
      levels: [
        { timeout_seconds: 60, targets: [oncall] },
        { timeout_seconds: 300, targets: [oncall] },
      ],
    };
    const d: EscalationPolicy = { repeat_count: 0, levels: [...c.levels].reverse() };
    assert.equal(samePolicy(c, d), false);
  });

  it('is reflexive, also against a rewritten copy', () => {
    fc.assert(
      fc.property(policy, (p) => {
        assert.equal(samePolicy(p, p), true);
        assert.equal(samePolicy(p, rewritten(p)), true);
      }),
    );
  });

  it('is symmetric and says equal exactly when the normalised JSON is equal', () => {
    fc.assert(
      fc.property(pair, ([a, b]) => {
        const want = normalised(a) === normalised(b);
        assert.equal(samePolicy(a, b), want);
        assert.equal(samePolicy(b, a), want);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('which rule holds a team’s policy', () => {
  const rule = (name: string, createdAt: string, over: Partial<RuleIdentity> = {}): RuleIdentity => ({
    name,
    teamRef: 'platform',
    createdAt,
    deleting: false,
    ...over,
  });

  it('is the oldest rule of the team', () => {
    const rules = [rule('newer', '2025-03-01T10:00:00Z'), rule('older', '2025-02-28T23:59:59Z')];
    assert.equal(policyHolder('platform', rules), 'older');
  });

  it('is decided by name between rules created in the same second', () => {
    const rules = [rule('beta', '2025-03-01T10:00:00Z'), rule('alpha', '2025-03-01T10:00:00Z')];
    assert.equal(policyHolder('platform', rules), 'alpha');
  });

  it('passes to the next oldest while the oldest is being deleted', () => {
    const rules = [
      rule('first', '2025-01-01T00:00:00Z', { deleting: true }),
      rule('second', '2025-01-02T00:00:00Z'),
      rule('third', '2025-01-03T00:00:00Z'),
    ];
    assert.equal(policyHolder('platform', rules), 'second');
  });

  it('is nobody when every rule of the team is being deleted, or there is none', () => {
    assert.equal(
      policyHolder('platform', [rule('only', '2025-01-01T00:00:00Z', { deleting: true })]),
      undefined,
    );
    assert.equal(policyHolder('platform', []), undefined);
    assert.equal(
      policyHolder('platform', [rule('x', '2025-01-01T00:00:00Z', { teamRef: 'infra' })]),
      undefined,
    );
  });

  it('ignores rules of other teams, however old', () => {
    const rules = [
      rule('infra-rule', '2020-01-01T00:00:00Z', { teamRef: 'infra' }),
      rule('mine', '2025-01-01T00:00:00Z'),
    ];
    assert.equal(policyHolder('platform', rules), 'mine');
  });

  it('is the minimum by (creation time, name) among the team’s rules not being deleted', () => {
    const name = fc.stringMatching(/^[a-z0-9]([a-z0-9.-]{0,5}[a-z0-9])?$/);
    const generated = fc.uniqueArray(
      fc.record({
        name,
        teamRef: fc.constantFrom('platform', 'infra'),
        second: fc.integer({ min: 1_735_689_600, max: 1_735_689_603 }),
        deleting: fc.boolean(),
      }),
      { selector: (r) => r.name, maxLength: 8 },
    );
    fc.assert(
      fc.property(generated, fc.constantFrom('platform', 'infra'), (rs, team) => {
        const rules: RuleIdentity[] = rs.map((r) => ({
          name: r.name,
          teamRef: r.teamRef,
          createdAt: new Date(r.second * 1000).toISOString().replace('.000Z', 'Z'),
          deleting: r.deleting,
        }));
        let best: { name: string; second: number } | undefined;
        for (const r of rs) {
          if (r.teamRef !== team || r.deleting) continue;
          if (!best || r.second < best.second || (r.second === best.second && r.name < best.name)) best = r;
        }
        assert.equal(policyHolder(team, rules), best?.name);
      }),
      { numRuns: 500 },
    );
  });
});
