/**
 * The lifecycle decision: RFC 0002's table row by row, then every combination of
 * (target, source, safe) enumerated, then random pairs, against the invariants that
 * make weebo-link safe to run: no write on an error path, never someone else's target,
 * never a deletion but from Detaching with `safe` true and `then: Delete`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import fc from 'fast-check';
import {
  type Decision,
  decide,
  desiredTarget,
  type Pair,
  type Rule,
  safeStateTarget,
} from '../src/domain/index.ts';
import { EXAMPLE_RULES_YAML } from '../src/example-rules.ts';
import { exampleRule, user } from './support.ts';

const keep = exampleRule();
const del = exampleRule(EXAMPLE_RULES_YAML.replace('then: Keep', 'then: Delete'));

function linkedTarget(rule: Rule, source: KubeObject, extra: Partial<KubeObject> = {}): KubeObject {
  const d = desiredTarget(rule, source);
  if (!d.ok) throw new Error(d.message);
  return { ...d.value, metadata: { ...d.value.metadata, uid: 't-uid', generation: 1 }, ...extra };
}
const readyStatus = { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True' }] };
function detaching(rule: Rule, live: KubeObject, status?: unknown): KubeObject {
  const s = safeStateTarget(rule, live, 'Detaching');
  return { ...s, metadata: { ...s.metadata, uid: 't-uid', generation: 1 }, ...(status ? { status } : {}) };
}
function detached(rule: Rule, live: KubeObject): KubeObject {
  const s = safeStateTarget(rule, live, 'Detached');
  return { ...s, metadata: { ...s.metadata, uid: 't-uid', generation: 1 }, status: readyStatus };
}

const alice = user('alice', { uid: 'a1' });

/**
 * A target created by hand, then given the link label and the source annotation by an
 * admin (RFC 0002, Exploitation: « Rattacher une cible existante »): no source-uid.
 */
function handLabelled(rule: Rule, state: string | undefined, spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'stalwart.weebo.io/v1alpha1',
    kind: 'StalwartAccount',
    metadata: {
      name: 'alice',
      namespace: 'mail',
      uid: 't-uid',
      generation: 1,
      labels: { 'link.weebo.io/link': rule.name, ...(state ? { 'link.weebo.io/state': state } : {}) },
      annotations: { 'link.weebo.io/source': 'authentik.weebo.io/AuthentikUser/auth/alice' },
    },
    spec: { domainRef: { name: 'old.example' }, name: 'alice', state: 'Active', ...spec },
  };
}

describe('the lifecycle of a target (RFC table)', () => {
  it('annotated source, no target: apply (Create), state Linked', () => {
    const d = decide(keep, { target: undefined, candidates: [alice], recorded: undefined });
    assert.equal(d.action, 'Apply');
    assert.equal(d.action === 'Apply' && d.reason, 'Create');
    assert.equal(d.action === 'Apply' && d.target.metadata.labels?.['link.weebo.io/state'], 'Linked');
  });

  it('source unchanged: nothing; source changed: re-apply (Update)', () => {
    const t = linkedTarget(keep, alice);
    assert.deepEqual(decide(keep, { target: t, candidates: [alice], recorded: alice }), {
      action: 'Nothing',
      reason: 'InSync',
    });
    const inactive = user('alice', { uid: 'a1', isActive: false });
    const d = decide(keep, { target: t, candidates: [inactive], recorded: inactive });
    assert.equal(d.action === 'Apply' && d.reason, 'Update');
    assert.equal(d.action === 'Apply' && (d.target.spec as { state: string }).state, 'Locked');
  });

  it('an immutable field changed on the source: nothing applied, Conflict on the source', () => {
    const t = linkedTarget(keep, alice);
    const renamed = user('alice', { uid: 'a1', username: 'alice.b' });
    const d = decide(keep, { target: t, candidates: [renamed], recorded: renamed });
    assert.equal(d.action, 'Refuse');
    assert.equal(d.action === 'Refuse' && d.reason, 'Conflict');
    assert.equal(d.action === 'Refuse' && d.regarding, renamed);
  });

  it('a target of that name without the link label: never adopted, TargetExists on the source', () => {
    const mine: KubeObject = {
      apiVersion: 'stalwart.weebo.io/v1alpha1',
      kind: 'StalwartAccount',
      metadata: { name: 'alice', namespace: 'mail' },
    };
    const d = decide(keep, { target: mine, candidates: [alice], recorded: undefined });
    assert.equal(d.action === 'Refuse' && d.reason, 'TargetExists');
  });

  it('source deleted, header removed, or another UID: onRemoval.patch, state Detaching', () => {
    const t = linkedTarget(keep, alice);
    const cases: [Pair, string][] = [
      [{ target: t, candidates: [], recorded: undefined }, 'SourceDeleted'],
      [{ target: t, candidates: [], recorded: user('alice', { uid: 'a1', header: null }) }, 'HeaderRemoved'],
      [
        { target: t, candidates: [user('alice', { uid: 'a2' })], recorded: user('alice', { uid: 'a2' }) },
        'SourceReplaced',
      ],
    ];
    for (const [pair, reason] of cases) {
      const d = decide(keep, pair);
      assert.equal(d.action, 'Detach', reason);
      assert.equal(d.action === 'Detach' && d.reason, reason);
      assert.equal(d.action === 'Detach' && (d.target.spec as { state: string }).state, 'Locked');
      assert.equal(d.action === 'Detach' && d.target.metadata.labels?.['link.weebo.io/state'], 'Detaching');
    }
  });

  it('Detaching and safe true: Keep gives Detached, Delete deletes; safe false waits; safe in error is refused', () => {
    const t = detaching(keep, linkedTarget(keep, alice), readyStatus);
    assert.equal(decide(keep, { target: t, candidates: [], recorded: undefined }).action, 'MarkDetached');
    assert.deepEqual(
      decide(del, {
        target: detaching(del, linkedTarget(del, alice), readyStatus),
        candidates: [],
        recorded: undefined,
      }),
      {
        action: 'Delete',
        uid: 't-uid',
      },
    );
    const notReady = detaching(keep, linkedTarget(keep, alice), { observedGeneration: 0, conditions: [] });
    assert.deepEqual(decide(keep, { target: notReady, candidates: [], recorded: undefined }), {
      action: 'Wait',
    });
    const broken = detaching(keep, linkedTarget(keep, alice), { observedGeneration: 1 });
    const d = decide(keep, { target: broken, candidates: [], recorded: undefined });
    assert.equal(d.action === 'Refuse' && d.reason, 'SafeFailed');
  });

  it('Detached and the source back: reattach with the new source-uid, Linked', () => {
    const t = detached(keep, linkedTarget(keep, alice));
    const back = user('alice', { uid: 'a3' });
    const d = decide(keep, { target: t, candidates: [back], recorded: back });
    assert.equal(d.action === 'Apply' && d.reason, 'Reattach');
    assert.equal(d.action === 'Apply' && d.target.metadata.annotations?.['link.weebo.io/source-uid'], 'a3');
    assert.equal(d.action === 'Apply' && d.target.metadata.labels?.['link.weebo.io/state'], 'Linked');
    assert.deepEqual(decide(keep, { target: t, candidates: [], recorded: undefined }), {
      action: 'Nothing',
      reason: 'Detached',
    });
  });

  it('a target no longer mapping a field weebo-link applied: re-applied, so the apply releases it', () => {
    const t = linkedTarget(keep, alice);
    const owned = (spec: Record<string, unknown>): KubeObject => ({
      ...t,
      metadata: {
        ...t.metadata,
        managedFields: [
          {
            manager: 'weebo-link/authentik-user-stalwart-account',
            operation: 'Apply',
            apiVersion: 'stalwart.weebo.io/v1alpha1',
            fieldsType: 'FieldsV1',
            fieldsV1: { 'f:spec': spec },
          },
        ],
      },
    });
    const mapped = { 'f:domainRef': { 'f:name': {} }, 'f:name': {}, 'f:state': {}, 'f:deletionPolicy': {} };
    assert.deepEqual(decide(keep, { target: owned(mapped), candidates: [alice], recorded: alice }), {
      action: 'Nothing',
      reason: 'InSync',
    });
    // The rule no longer maps deletionPolicy, which weebo-link's field manager still owns.
    const dropped = exampleRule(EXAMPLE_RULES_YAML.replace('        deletionPolicy: Orphan\n', ''));
    const d = decide(dropped, { target: owned(mapped), candidates: [alice], recorded: alice });
    assert.equal(d.action === 'Apply' && d.reason, 'Update');
    assert.deepEqual(d.action === 'Apply' && d.target.spec, {
      domainRef: { name: 'weebo.poc' },
      name: 'alice',
      state: 'Active',
    });
    // A field another manager owns is not ours to release.
    const theirs = { ...owned(mapped), spec: { ...(t.spec as object), quota: 5 } };
    assert.equal(decide(keep, { target: theirs, candidates: [alice], recorded: alice }).action, 'Nothing');
    // The same while Detaching: the safe-state patch is re-applied without the dropped field.
    const safeState = detaching(keep, t);
    const leaving: KubeObject = {
      ...safeState,
      metadata: { ...safeState.metadata, managedFields: owned(mapped).metadata.managedFields },
    };
    const dd = decide(dropped, { target: leaving, candidates: [], recorded: undefined });
    assert.equal(dd.action, 'Detach');
    assert.deepEqual(dd.action === 'Detach' && dd.target.spec, {
      domainRef: { name: 'weebo.poc' },
      name: 'alice',
      state: 'Locked',
    });
  });

  it('a target an admin labelled by hand with its source annotation is attached: Apply (Attach), UID recorded, Linked', () => {
    for (const rule of [keep, del])
      for (const state of [undefined, 'Linked', 'Detaching']) {
        const label = `${rule.onRemoval.then}/${state ?? 'no state'}`;
        const d = decide(rule, { target: handLabelled(rule, state), candidates: [alice], recorded: alice });
        assert.equal(d.action === 'Apply' && d.reason, 'Attach', label);
        assert.equal(d.action === 'Apply' && d.source, alice, label);
        assert.equal(
          d.action === 'Apply' && d.target.metadata.annotations?.['link.weebo.io/source-uid'],
          'a1',
          label,
        );
        assert.equal(
          d.action === 'Apply' && d.target.metadata.labels?.['link.weebo.io/state'],
          'Linked',
          label,
        );
        // The mapping's values, written literally: the hand-set ones are replaced.
        assert.deepEqual(
          d.action === 'Apply' && d.target.spec,
          { domainRef: { name: 'weebo.poc' }, name: 'alice', state: 'Active', deletionPolicy: 'Orphan' },
          label,
        );
      }
  });

  it('attaching checks the immutable fields: a mismatch is a Conflict on the source, nothing written', () => {
    const target = handLabelled(keep, 'Linked', { name: 'alice.old' });
    const d = decide(keep, { target, candidates: [alice], recorded: alice });
    assert.equal(d.action === 'Refuse' && d.reason, 'Conflict');
    assert.equal(d.action === 'Refuse' && d.regarding, alice);
  });

  it('a hand-labelled target no source claims waits (AwaitingSource): never locked, never deleted', () => {
    const readyHand = (rule: Rule, state: string): KubeObject => ({
      ...handLabelled(rule, state, { state: 'Locked' }),
      status: readyStatus,
    });
    const elsewhere = user('alice', { uid: 'a9', ns: 'auth2' });
    for (const rule of [keep, del])
      for (const state of ['Linked', 'Detaching']) {
        const label = `${rule.onRemoval.then}/${state}`;
        const pairs: [string, Pair][] = [
          ['no source', { target: readyHand(rule, state), candidates: [], recorded: undefined }],
          [
            'header removed',
            {
              target: readyHand(rule, state),
              candidates: [],
              recorded: user('alice', { uid: 'a1', header: null }),
            },
          ],
          // Another source maps to that name, not the one the annotation names.
          [
            'another claimant',
            { target: readyHand(rule, state), candidates: [elsewhere], recorded: undefined },
          ],
        ];
        for (const [what, pair] of pairs)
          assert.deepEqual(
            decide(rule, pair),
            { action: 'Nothing', reason: 'AwaitingSource' },
            `${label}, ${what}`,
          );
      }
    // Without the source annotation at all, no source is named: the same.
    const labelled = handLabelled(keep, 'Linked');
    const bare: KubeObject = { ...labelled, metadata: { ...labelled.metadata, annotations: {} } };
    assert.deepEqual(decide(keep, { target: bare, candidates: [alice], recorded: undefined }), {
      action: 'Nothing',
      reason: 'AwaitingSource',
    });
  });

  it('a target set Detached by hand, with no source-uid, is reattached by its source as before', () => {
    const d = decide(keep, { target: handLabelled(keep, 'Detached'), candidates: [alice], recorded: alice });
    assert.equal(d.action === 'Apply' && d.reason, 'Reattach');
    assert.equal(d.action === 'Apply' && d.target.metadata.annotations?.['link.weebo.io/source-uid'], 'a1');
    assert.deepEqual(
      decide(keep, { target: handLabelled(keep, 'Detached'), candidates: [], recorded: undefined }),
      { action: 'Nothing', reason: 'Detached' },
    );
  });

  it('a header other than enabled is refused, and is not a departure', () => {
    const t = linkedTarget(keep, alice);
    const wrong = user('alice', { uid: 'a1', header: 'true' });
    const d = decide(keep, { target: t, candidates: [wrong], recorded: wrong });
    assert.equal(d.action === 'Refuse' && d.reason, 'InvalidHeader');
    const none = decide(keep, { target: undefined, candidates: [wrong], recorded: undefined });
    assert.equal(none.action === 'Refuse' && none.reason, 'InvalidHeader');
  });
});

// Every combination, enumerated.
const WRITES = new Set(['Apply', 'Detach', 'MarkDetached', 'Delete']);
type TargetCase =
  | 'absent'
  | 'unlabelled'
  | 'other-link'
  | 'linked'
  | 'detaching'
  | 'detached'
  | 'deleting'
  /** Labelled by hand with the source annotation, no source-uid: weebo-link never linked it. */
  | 'unrecorded'
  | 'unrecorded-detaching';
type SourceCase =
  | 'none'
  | 'same'
  | 'other-uid'
  | 'invalid-header'
  | 'header-removed'
  | 'mapping-error'
  | 'renamed';
type SafeCase = 'true' | 'false' | 'error';

function build(rule: Rule, tc: TargetCase, sc: SourceCase, safe: SafeCase): Pair {
  const status =
    safe === 'true'
      ? readyStatus
      : safe === 'false'
        ? { observedGeneration: 0, conditions: [] }
        : { observedGeneration: 1 };
  const base = linkedTarget(rule, alice);
  const targets: Record<TargetCase, KubeObject | undefined> = {
    absent: undefined,
    unlabelled: {
      apiVersion: base.apiVersion,
      kind: base.kind,
      metadata: { name: 'alice', namespace: 'mail' },
      spec: base.spec,
    },
    'other-link': { ...base, metadata: { ...base.metadata, labels: { 'link.weebo.io/link': 'another' } } },
    linked: { ...base, status },
    detaching: detaching(rule, base, status),
    detached: { ...detached(rule, base), status },
    deleting: { ...base, metadata: { ...base.metadata, deletionTimestamp: '2026-10-18T10:00:00Z' } },
    unrecorded: { ...handLabelled(rule, 'Linked'), status },
    'unrecorded-detaching': { ...handLabelled(rule, 'Detaching', { state: 'Locked' }), status },
  };
  const sources: Record<SourceCase, { c: KubeObject[]; r: KubeObject | undefined }> = {
    none: { c: [], r: undefined },
    same: { c: [alice], r: alice },
    'other-uid': { c: [user('alice', { uid: 'zz' })], r: user('alice', { uid: 'zz' }) },
    'invalid-header': {
      c: [user('alice', { uid: 'a1', header: 'yes' })],
      r: user('alice', { uid: 'a1', header: 'yes' }),
    },
    'header-removed': { c: [], r: user('alice', { uid: 'a1', header: null }) },
    'mapping-error': {
      c: [{ ...alice, spec: { isActive: true } }],
      r: { ...alice, spec: { isActive: true } },
    },
    renamed: {
      c: [user('alice', { uid: 'a1', username: 'other' })],
      r: user('alice', { uid: 'a1', username: 'other' }),
    },
  };
  const s = sources[sc];
  return { target: targets[tc], candidates: s.c, recorded: s.r };
}

function checkInvariants(rule: Rule, pair: Pair, d: Decision, label: string): void {
  const t = pair.target;
  const ours = t?.metadata.labels?.['link.weebo.io/link'] === rule.name;
  if (WRITES.has(d.action)) {
    assert.ok(!t || ours || d.action === 'Apply', `${label}: writes only its own targets`);
    assert.ok(!(t && !ours), `${label}: never adopts a target without its label`);
    assert.ok(!t?.metadata.deletionTimestamp, `${label}: never writes a target being deleted`);
  }
  if (d.action === 'Delete') {
    assert.equal(rule.onRemoval.then, 'Delete', `${label}: deletes only with then: Delete`);
    assert.equal(
      t?.metadata.labels?.['link.weebo.io/state'],
      'Detaching',
      `${label}: deletes only from Detaching`,
    );
  }
  if (d.action === 'Apply' || d.action === 'Detach' || d.action === 'MarkDetached') {
    assert.equal(d.target.metadata.labels?.['link.weebo.io/link'], rule.name);
    assert.equal(d.target.metadata.finalizers, undefined, `${label}: never states finalizers`);
    assert.equal(d.target.status, undefined, `${label}: never states status`);
  }
  if (ours && !t?.metadata.annotations?.['link.weebo.io/source-uid']) {
    // weebo-link never linked it (labelled by hand): it may attach it, never lock or delete it.
    assert.ok(
      d.action !== 'Detach' && d.action !== 'MarkDetached' && d.action !== 'Delete',
      `${label}: an unrecorded target is never detached or deleted`,
    );
  }
  if (d.action === 'MarkDetached' || d.action === 'Delete') {
    assert.equal(
      t?.metadata.labels?.['link.weebo.io/state'],
      'Detaching',
      `${label}: safe is only checked when Detaching`,
    );
  }
}

describe('every (target, source, safe) combination', () => {
  const targets: TargetCase[] = [
    'absent',
    'unlabelled',
    'other-link',
    'linked',
    'detaching',
    'detached',
    'deleting',
    'unrecorded',
    'unrecorded-detaching',
  ];
  const sources: SourceCase[] = [
    'none',
    'same',
    'other-uid',
    'invalid-header',
    'header-removed',
    'mapping-error',
    'renamed',
  ];
  const safes: SafeCase[] = ['true', 'false', 'error'];

  it('keeps the invariants, and error paths never write', () => {
    let n = 0;
    for (const rule of [keep, del])
      for (const tc of targets)
        for (const sc of sources)
          for (const sf of safes) {
            const pair = build(rule, tc, sc, sf);
            const d = decide(rule, pair);
            const label = `${rule.onRemoval.then}/${tc}/${sc}/safe=${sf} → ${d.action}`;
            checkInvariants(rule, pair, d, label);
            if (sc === 'invalid-header' || sc === 'mapping-error')
              assert.ok(!WRITES.has(d.action), `${label}: an error path writes nothing`);
            if (sc === 'renamed' && tc !== 'absent')
              assert.ok(d.action !== 'Apply', `${label}: an immutable change is never applied`);
            if (sc === 'invalid-header' && (tc === 'linked' || tc === 'absent'))
              assert.equal(d.action === 'Refuse' && d.reason, 'InvalidHeader', label);
            if (tc === 'linked' && (sc === 'none' || sc === 'header-removed' || sc === 'other-uid'))
              assert.equal(d.action, 'Detach', label);
            if (tc === 'detaching' && sf === 'error' && (sc === 'none' || sc === 'header-removed'))
              assert.equal(d.action === 'Refuse' && d.reason, 'SafeFailed', label);
            if (tc === 'detached' && sc === 'none') assert.equal(d.action, 'Nothing', label);
            // The annotation names auth/alice: whatever its UID, that source attaches the target.
            if (tc.startsWith('unrecorded') && (sc === 'same' || sc === 'other-uid'))
              assert.equal(d.action === 'Apply' && d.reason, 'Attach', label);
            if (tc.startsWith('unrecorded') && (sc === 'none' || sc === 'header-removed'))
              assert.deepEqual(d, { action: 'Nothing', reason: 'AwaitingSource' }, label);
            n++;
          }
    assert.equal(n, 2 * 9 * 7 * 3);
  });
});

describe('random pairs', () => {
  it('keep the invariants, and the decision is a function of the pair', () => {
    const targetCase = fc.constantFrom<TargetCase>(
      'absent',
      'unlabelled',
      'other-link',
      'linked',
      'detaching',
      'detached',
      'deleting',
      'unrecorded',
      'unrecorded-detaching',
    );
    const sourceCase = fc.constantFrom<SourceCase>(
      'none',
      'same',
      'other-uid',
      'invalid-header',
      'header-removed',
      'mapping-error',
      'renamed',
    );
    const safeCase = fc.constantFrom<SafeCase>('true', 'false', 'error');
    fc.assert(
      fc.property(
        fc.boolean(),
        targetCase,
        fc.array(sourceCase, { maxLength: 3 }),
        safeCase,
        fc.boolean(),
        (useDelete, tc, scs, sf, isActive) => {
          const rule = useDelete ? del : keep;
          const pairs = scs.map((sc) => build(rule, tc, sc, sf));
          const base = build(rule, tc, 'none', sf);
          // Distinct objects: another namespace and UID each (a store holds one object per key);
          // the first keeps its own, the one a target's source annotation names.
          const candidates = pairs
            .flatMap((p) => p.candidates)
            .map((c, i) => ({
              ...c,
              metadata: {
                ...c.metadata,
                namespace: i === 0 ? c.metadata.namespace : `auth${i}`,
                uid: i === 0 ? c.metadata.uid : `${c.metadata.uid}-${i}`,
              },
              spec: { ...(c.spec as object), ...(isActive ? {} : { isActive: false }) },
            }));
          const pair: Pair = { target: base.target, candidates, recorded: pairs[0]?.recorded };
          const d = decide(rule, pair);
          checkInvariants(rule, pair, d, `${tc}/${scs.join('+')}/${sf}`);
          assert.deepEqual(decide(rule, pair), d);
          // Order of candidates never changes the answer.
          assert.deepEqual(decide(rule, { ...pair, candidates: [...candidates].reverse() }).action, d.action);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
