/** The mapping, the safe state and `safe`, on the RFC's example rule. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  desiredTarget,
  evaluateSafe,
  immutableChange,
  safeStateTarget,
  targetKeyOf,
} from '../src/domain/index.ts';
import { EXAMPLE_RULES_YAML } from '../src/example-rules.ts';
import { exampleRule, user } from './support.ts';

const rule = exampleRule();

describe('mapping', () => {
  it('gives the RFC target: headers, mapped spec, nothing else', () => {
    const d = desiredTarget(rule, user('alice', { uid: '6f1c' }));
    assert.ok(d.ok);
    assert.deepEqual(d.value, {
      apiVersion: 'stalwart.weebo.io/v1alpha1',
      kind: 'StalwartAccount',
      metadata: {
        name: 'alice',
        namespace: 'mail',
        labels: {
          'app.kubernetes.io/managed-by': 'weebo-link',
          'link.weebo.io/link': 'authentik-user-stalwart-account',
          'link.weebo.io/state': 'Linked',
        },
        annotations: {
          'link.weebo.io/source': 'authentik.weebo.io/AuthentikUser/auth/alice',
          'link.weebo.io/source-uid': '6f1c',
        },
      },
      spec: { domainRef: { name: 'weebo.poc' }, name: 'alice', state: 'Active', deletionPolicy: 'Orphan' },
    });
    const locked = desiredTarget(rule, user('alice', { isActive: false }));
    assert.ok(locked.ok);
    assert.equal((locked.value.spec as { state: string }).state, 'Locked');
    assert.deepEqual(targetKeyOf(rule, user('bob')), { ok: true, value: 'mail/bob' });
  });

  it('a leaf that fails (a missing field without has()) fails the whole mapping', () => {
    const u = user('carol');
    const broken = { ...u, spec: { isActive: true } };
    const d = desiredTarget(rule, broken);
    assert.equal(d.ok, false);
    assert.match(!d.ok ? d.message : '', /target\.spec\.name .*username/);
  });

  it('JSON integers are CEL ints: generation == 3 is true', () => {
    const r = exampleRule(
      EXAMPLE_RULES_YAML.replace('target.spec.state == "Locked" &&', 'target.metadata.generation == 3 &&'),
    );
    const t = {
      apiVersion: 'x/v1',
      kind: 'X',
      metadata: { name: 'a', generation: 3 },
      spec: { state: 'Locked' },
      status: { observedGeneration: 3, conditions: [{ type: 'Ready', status: 'True' }] },
    };
    assert.deepEqual(evaluateSafe(r, t), { ok: true, value: true });
  });

  it('safe: an error is not false; false when observedGeneration lags; true when Locked and Ready', () => {
    const base = {
      apiVersion: 'x/v1',
      kind: 'X',
      metadata: { name: 'a', generation: 2 },
      spec: { state: 'Locked' },
    };
    assert.deepEqual(
      evaluateSafe(rule, base),
      { ok: true, value: false },
      'has(target.status) guards a target never reconciled',
    );
    const noConditions = { ...base, status: { observedGeneration: 2 } };
    assert.equal(evaluateSafe(rule, noConditions).ok, false);
    const lagging = {
      ...base,
      status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True' }] },
    };
    assert.deepEqual(evaluateSafe(rule, lagging), { ok: true, value: false });
    const ready = {
      ...base,
      status: { observedGeneration: 2, conditions: [{ type: 'Ready', status: 'True' }] },
    };
    assert.deepEqual(evaluateSafe(rule, ready), { ok: true, value: true });
  });

  it('the safe state keeps every mapped field and patches over them', () => {
    const live = {
      apiVersion: 'stalwart.weebo.io/v1alpha1',
      kind: 'StalwartAccount',
      metadata: {
        name: 'alice',
        namespace: 'mail',
        finalizers: ['stalwart.weebo.io/account'],
        annotations: {
          'link.weebo.io/source': 'authentik.weebo.io/AuthentikUser/auth/alice',
          'link.weebo.io/source-uid': 'u1',
        },
      },
      spec: {
        domainRef: { name: 'weebo.poc' },
        name: 'alice',
        state: 'Active',
        deletionPolicy: 'Orphan',
        quota: 5,
      },
      status: { observedGeneration: 1 },
    };
    const s = safeStateTarget(rule, live, 'Detaching');
    assert.deepEqual(s.spec, {
      domainRef: { name: 'weebo.poc' },
      name: 'alice',
      state: 'Locked',
      deletionPolicy: 'Orphan',
    });
    assert.equal(s.metadata.labels?.['link.weebo.io/state'], 'Detaching');
    assert.equal(s.metadata.annotations?.['link.weebo.io/source-uid'], 'u1');
    assert.equal(s.metadata.finalizers, undefined, 'finalizers are never stated');
  });

  it('immutable: a changed username is a conflict', () => {
    const d = desiredTarget(rule, user('alice', { username: 'alice2' }));
    assert.ok(d.ok);
    const live = { ...d.value, spec: { ...(d.value.spec as object), name: 'alice' } };
    assert.deepEqual(immutableChange(rule, d.value, live), {
      path: 'spec.name',
      live: 'alice',
      desired: 'alice2',
    });
  });
});
