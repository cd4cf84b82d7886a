/**
 * Cross-namespace consent (DESIGN §4.6): a TerdutTeam in its server's namespace is always
 * admitted; one from another namespace only as the server's spec.allowedTeams says —
 * None and Same never, All always, Selector when the team namespace's labels match a
 * metav1.LabelSelector. The oracle matcher is written here from the LabelSelector
 * documentation, over the labels as a list of own pairs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { LabelSelector, LabelSelectorRequirement } from '../src/api/common.ts';
import { AllowedFrom, type AllowedTeams } from '../src/api/terdut-server.ts';
import { consent, needsNamespaceLabels, selectorMatches } from '../src/domain/consent.ts';

type Labels = Readonly<Record<string, string>>;

/** metav1.LabelSelector, naively: all matchLabels pairs present and equal; every expression holds. */
function oracleMatches(selector: LabelSelector, labels: Labels): boolean {
  const pairs = Object.entries(labels);
  const has = (key: string): boolean => pairs.some(([k]) => k === key);
  const get = (key: string): string | undefined => pairs.find(([k]) => k === key)?.[1];
  const labelsHold = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => has(k) && get(k) === v);
  const expressionsHold = (selector.matchExpressions ?? []).every((e) => {
    const values = e.values ?? [];
    const value = get(e.key);
    if (e.operator === 'Exists') return has(e.key);
    if (e.operator === 'DoesNotExist') return !has(e.key);
    if (e.operator === 'In') return has(e.key) && values.some((x) => x === value);
    return !has(e.key) || !values.some((x) => x === value);
  });
  return labelsHold && expressionsHold;
}

const SERVER_NS = 'platform-oncall';
const namespace = fc.constantFrom(SERVER_NS, 'team-a', 'team-b');
const labelKey = fc.constantFrom('env', 'tier', 'terdut.ryuvia.com/allowed', 'team');
const labelValue = fc.constantFrom('prod', 'dev', 'true', '');
const labels: fc.Arbitrary<Labels> = fc.dictionary(labelKey, labelValue, { maxKeys: 4 });
const requirement: fc.Arbitrary<LabelSelectorRequirement> = fc.record(
  {
    key: labelKey,
    operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist'),
    values: fc.array(labelValue, { maxLength: 3 }),
  },
  { requiredKeys: ['key', 'operator'] },
);
const selector: fc.Arbitrary<LabelSelector> = fc.record(
  {
    matchLabels: fc.dictionary(labelKey, labelValue, { maxKeys: 2 }),
    matchExpressions: fc.array(requirement, { maxLength: 3 }),
  },
  { requiredKeys: [] },
);
const from = fc.constantFrom(AllowedFrom.None, AllowedFrom.Same, AllowedFrom.All, AllowedFrom.Selector);
const allowedTeams: fc.Arbitrary<AllowedTeams | undefined> = fc.option(
  fc.record({ namespaces: fc.record({ from, selector }, { requiredKeys: [] }) }, { requiredKeys: [] }),
  { nil: undefined },
);

function decide(teamNamespace: string, allowed: AllowedTeams | undefined, nsLabels?: Labels) {
  return consent({
    teamNamespace,
    serverNamespace: SERVER_NS,
    serverName: 'terdut',
    ...(allowed ? { allowedTeams: allowed } : {}),
    ...(nsLabels ? { namespaceLabels: nsLabels } : {}),
  });
}

describe('label selectors (metav1 semantics)', () => {
  it('matches everything with an empty selector', () => {
    assert.equal(selectorMatches({}, {}), true);
    assert.equal(selectorMatches({}, { env: 'prod' }), true);
    assert.equal(selectorMatches({ matchLabels: {}, matchExpressions: [] }, { env: 'prod' }), true);
  });

  it('needs every matchLabels pair present and equal', () => {
    assert.equal(selectorMatches({ matchLabels: { env: 'prod' } }, { env: 'prod', tier: 'x' }), true);
    assert.equal(selectorMatches({ matchLabels: { env: 'prod' } }, { env: 'dev' }), false);
    assert.equal(selectorMatches({ matchLabels: { env: 'prod', tier: 'x' } }, { env: 'prod' }), false);
    assert.equal(selectorMatches({ matchLabels: { env: '' } }, {}), false);
  });

  it('applies In, NotIn, Exists and DoesNotExist as Kubernetes does', () => {
    const expr = (e: LabelSelectorRequirement): LabelSelector => ({ matchExpressions: [e] });
    assert.equal(
      selectorMatches(expr({ key: 'env', operator: 'In', values: ['a', 'b'] }), { env: 'b' }),
      true,
    );
    assert.equal(
      selectorMatches(expr({ key: 'env', operator: 'In', values: ['a', 'b'] }), { env: 'c' }),
      false,
    );
    assert.equal(selectorMatches(expr({ key: 'env', operator: 'In', values: ['a'] }), {}), false);
    assert.equal(selectorMatches(expr({ key: 'env', operator: 'NotIn', values: ['a'] }), {}), true);
    assert.equal(
      selectorMatches(expr({ key: 'env', operator: 'NotIn', values: ['a'] }), { env: 'a' }),
      false,
    );
    assert.equal(selectorMatches(expr({ key: 'env', operator: 'NotIn', values: ['a'] }), { env: 'b' }), true);
    assert.equal(selectorMatches(expr({ key: 'env', operator: 'Exists' }), { env: '' }), true);
    assert.equal(selectorMatches(expr({ key: 'env', operator: 'Exists' }), { tier: 'x' }), false);
    assert.equal(selectorMatches(expr({ key: 'env', operator: 'DoesNotExist' }), {}), true);
    assert.equal(selectorMatches(expr({ key: 'env', operator: 'DoesNotExist' }), { env: 'x' }), false);
  });

  it('agrees with a naive matcher for any selector and labels', () => {
    fc.assert(
      fc.property(selector, labels, (s, l) => {
        assert.equal(selectorMatches(s, l), oracleMatches(s, l));
      }),
      { numRuns: 1000 },
    );
  });

  it('does not see a label a namespace lacks, whatever the key is called (constructor, toString)', () => {
    // `constructor` and `toString` are valid label keys; a namespace without them must not
    // satisfy Exists, and must satisfy DoesNotExist — else a Selector server admits teams
    // from namespaces that never opted in.
    const labelsWithoutKey = { env: 'prod' };
    const admitted = consent({
      teamNamespace: 'team-a',
      serverNamespace: SERVER_NS,
      serverName: 'terdut',
      allowedTeams: {
        namespaces: {
          from: AllowedFrom.Selector,
          selector: { matchExpressions: [{ key: 'constructor', operator: 'Exists' }] },
        },
      },
      namespaceLabels: labelsWithoutKey,
    });
    assert.equal(admitted.permitted, false, 'Selector "constructor Exists" admits an unlabelled namespace');
    for (const key of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      assert.equal(
        selectorMatches({ matchExpressions: [{ key, operator: 'Exists' }] }, labelsWithoutKey),
        false,
        `Exists ${key}`,
      );
      assert.equal(
        selectorMatches({ matchExpressions: [{ key, operator: 'DoesNotExist' }] }, labelsWithoutKey),
        true,
        `DoesNotExist ${key}`,
      );
    }
  });
});

describe('cross-namespace consent (§4.6)', () => {
  it('always admits a team in the server’s own namespace, whatever allowedTeams says', () => {
    fc.assert(
      fc.property(allowedTeams, fc.option(labels, { nil: undefined }), (allowed, l) => {
        assert.deepEqual(decide(SERVER_NS, allowed, l), { permitted: true, crossNamespace: false });
        assert.equal(needsNamespaceLabels(SERVER_NS, SERVER_NS, allowed), false);
      }),
    );
  });

  it('decides a team from another namespace by from: None/Same never, All always, Selector by labels', () => {
    fc.assert(
      fc.property(namespace, allowedTeams, labels, (ns, allowed, l) => {
        fc.pre(ns !== SERVER_NS);
        const mode = allowed?.namespaces?.from ?? 'None';
        const sel = allowed?.namespaces?.selector;
        const want = mode === 'All' || (mode === 'Selector' && sel !== undefined && oracleMatches(sel, l));
        const got = decide(ns, allowed, l);
        assert.equal(got.permitted, want);
        if (got.permitted) assert.equal(got.crossNamespace, true);
        assert.equal(needsNamespaceLabels(ns, SERVER_NS, allowed), mode === 'Selector');
      }),
      { numRuns: 1000 },
    );
  });

  it('admits no other namespace by default (no allowedTeams, or no from)', () => {
    for (const allowed of [undefined, {}, { namespaces: {} }]) {
      const got = decide('team-a', allowed, { 'terdut.ryuvia.com/allowed': 'true' });
      assert.equal(got.permitted, false);
    }
  });

  it('never lets Same admit another namespace, even one whose labels would match a selector', () => {
    const allowed: AllowedTeams = {
      namespaces: { from: AllowedFrom.Same, selector: { matchLabels: { env: 'prod' } } },
    };
    assert.equal(decide('team-a', allowed, { env: 'prod' }).permitted, false);
  });

  it('refuses under Selector when no selector is given', () => {
    const got = decide('team-a', { namespaces: { from: AllowedFrom.Selector } }, { env: 'prod' });
    assert.equal(got.permitted, false);
  });

  it('admits every namespace under Selector with an empty selector', () => {
    const got = decide('team-a', { namespaces: { from: AllowedFrom.Selector, selector: {} } }, {});
    assert.deepEqual(got, { permitted: true, crossNamespace: true });
  });

  it('revokes when the namespace loses its label (labels are re-read on every decision)', () => {
    const allowed: AllowedTeams = {
      namespaces: {
        from: AllowedFrom.Selector,
        selector: { matchLabels: { 'terdut.ryuvia.com/allowed': 'true' } },
      },
    };
    assert.equal(decide('team-a', allowed, { 'terdut.ryuvia.com/allowed': 'true' }).permitted, true);
    assert.equal(decide('team-a', allowed, {}).permitted, false);
    assert.equal(decide('team-a', allowed).permitted, false);
  });

  it('tells a refused team which server refused it and how its owner can admit it', () => {
    const none = decide('team-a', { namespaces: { from: AllowedFrom.None } });
    assert.equal(none.permitted, false);
    if (!none.permitted) {
      assert.match(none.message, /TerdutServer platform-oncall\/terdut/);
      assert.match(none.message, /from: All/);
      assert.match(none.message, /namespace team-a/);
    }
    const sel = decide(
      'team-b',
      { namespaces: { from: AllowedFrom.Selector, selector: { matchLabels: { env: 'prod' } } } },
      { env: 'dev' },
    );
    assert.equal(sel.permitted, false);
    if (!sel.permitted) {
      assert.match(sel.message, /TerdutServer platform-oncall\/terdut/);
      assert.match(sel.message, /env=prod/);
      assert.match(sel.message, /namespace team-b does not match/);
    }
  });
});
