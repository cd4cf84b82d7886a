/**
 * Conditions behave as `meta.SetStatusCondition` does, and `setCondition` refuses
 * exactly what the apiserver refuses (checked against a real one).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import fc from 'fast-check';
import { ApiErrorReason, isApiError } from '../src/client/errors.ts';
import {
  type Condition,
  type ConditionStatus,
  type ConditionUpdate,
  findCondition,
  InvalidConditionError,
  isFalse,
  isTrue,
  MAX_CONDITION_MESSAGE_BYTES,
  removeCondition,
  setCondition,
  timestamp,
} from '../src/objects/conditions.ts';

const T0 = new Date('2026-03-01T10:00:00.000Z');
const T1 = new Date('2026-03-01T10:05:00.789Z');

const statusArb = fc.constantFrom<ConditionStatus>('True', 'False', 'Unknown');
const typeArb = fc.constantFrom('Ready', 'Synced', 'Degraded', 'example.com/Healthy', 'Progressing');
const reasonArb = fc.stringMatching(/^[A-Za-z]([A-Za-z0-9_,:]{0,20}[A-Za-z0-9_])?$/);
const timeArb = fc
  .date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true })
  .map(timestamp);
const updateArb: fc.Arbitrary<ConditionUpdate> = fc.record(
  {
    type: typeArb,
    status: statusArb,
    reason: reasonArb,
    message: fc.string({ maxLength: 40 }),
    observedGeneration: fc.nat(20),
  },
  { requiredKeys: ['type', 'status', 'reason'] },
);
const conditionArb: fc.Arbitrary<Condition> = fc
  .tuple(updateArb, timeArb)
  .map(([u, t]) => ({ ...u, message: u.message ?? '', lastTransitionTime: t }));
const conditionsArb = fc.uniqueArray(conditionArb, { selector: (c) => c.type, maxLength: 5 });

describe('conditions: setCondition', () => {
  it('adds a new type with lastTransitionTime now, in whole seconds', () => {
    const next = setCondition(undefined, { type: 'Ready', status: 'True', reason: 'Converged' }, T1);
    assert.deepEqual(next, [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Converged',
        message: '',
        lastTransitionTime: '2026-03-01T10:05:00Z',
      },
    ]);
  });

  it('keeps lastTransitionTime when only reason, message or observedGeneration change', () => {
    const a = setCondition(
      [],
      { type: 'Ready', status: 'False', reason: 'Pending', observedGeneration: 1 },
      T0,
    );
    const b = setCondition(
      a,
      {
        type: 'Ready',
        status: 'False',
        reason: 'Waiting',
        message: 'for the database',
        observedGeneration: 2,
      },
      T1,
    );
    assert.equal(b[0]?.lastTransitionTime, timestamp(T0));
    assert.equal(b[0]?.reason, 'Waiting');
    assert.equal(b[0]?.message, 'for the database');
    assert.equal(b[0]?.observedGeneration, 2);
  });

  it('moves lastTransitionTime when the status changes', () => {
    const a = setCondition([], { type: 'Ready', status: 'False', reason: 'Pending' }, T0);
    const b = setCondition(a, { type: 'Ready', status: 'True', reason: 'Pending' }, T1);
    assert.equal(b[0]?.lastTransitionTime, timestamp(T1));
  });

  it('property: lastTransitionTime changes exactly when the status of that type changes (or it is new)', () => {
    fc.assert(
      fc.property(conditionsArb, updateArb, fc.date({ noInvalidDate: true }), (current, update, now) => {
        const before = findCondition(current, update.type);
        const after = findCondition(setCondition(current, update, now), update.type);
        assert.ok(after);
        const expected =
          before === undefined || before.status !== update.status
            ? timestamp(now)
            : before.lastTransitionTime;
        assert.equal(after.lastTransitionTime, expected);
        assert.equal(after.status, update.status);
        assert.equal(after.reason, update.reason);
        assert.equal(after.message, update.message ?? '');
        assert.equal(after.observedGeneration, update.observedGeneration);
      }),
    );
  });

  it('property: other conditions, their order and the input array are left alone; one entry per type', () => {
    fc.assert(
      fc.property(conditionsArb, updateArb, fc.date({ noInvalidDate: true }), (current, update, now) => {
        const snapshot = JSON.stringify(current);
        const next = setCondition(Object.freeze([...current]), update, now);
        assert.equal(JSON.stringify(current), snapshot, 'the input is not mutated');
        assert.deepEqual(
          next.filter((c) => c.type !== update.type),
          current.filter((c) => c.type !== update.type),
        );
        assert.equal(new Set(next.map((c) => c.type)).size, next.length);
        const wasThere = current.some((c) => c.type === update.type);
        assert.equal(next.length, current.length + (wasThere ? 0 : 1));
        if (wasThere) {
          assert.deepEqual(
            next.map((c) => c.type),
            current.map((c) => c.type),
          );
        }
      }),
    );
  });

  it('property: setting the same condition again changes nothing and returns the same array', () => {
    fc.assert(
      fc.property(conditionsArb, updateArb, fc.date({ noInvalidDate: true }), (current, update, now) => {
        const once = setCondition(current, update, now);
        assert.equal(setCondition(once, update, new Date(now.getTime() + 60_000)), once);
      }),
    );
  });

  it('returns a new array when something changed', () => {
    const a = setCondition([], { type: 'Ready', status: 'True', reason: 'Ok' }, T0);
    assert.notEqual(setCondition(a, { type: 'Ready', status: 'True', reason: 'Ok', message: 'x' }, T0), a);
  });
});

describe('conditions: validation', () => {
  const valid: ConditionUpdate = { type: 'Ready', status: 'True', reason: 'Ok' };
  const refuses = (u: ConditionUpdate, field: InvalidConditionError['field']): void => {
    assert.throws(
      () => setCondition([], u, T0),
      (err: unknown) => err instanceof InvalidConditionError && err.field === field,
      `${field} of ${JSON.stringify(u).slice(0, 100)} is refused`,
    );
  };

  it('accepts CamelCase reasons with digits, _ , and :, as the apiserver does', () => {
    for (const reason of ['Ok', 'A', 'ReconcileSucceeded', 'Error_42', 'Failed:Timeout,Retrying', 'x_']) {
      assert.doesNotThrow(() => setCondition([], { ...valid, reason }, T0), reason);
    }
  });

  it('refuses empty reasons, spaces, a leading digit, a trailing , or :, and non-ASCII letters', () => {
    for (const reason of [
      '',
      'Not ready',
      '1Failed',
      'Failed:',
      'Failed,',
      'Échec',
      'Fail-ed',
      'a'.repeat(1025),
    ]) {
      refuses({ ...valid, reason }, 'reason');
    }
  });

  it('accepts a message of 32768 bytes and refuses 32769, counting UTF-8 bytes', () => {
    assert.equal(MAX_CONDITION_MESSAGE_BYTES, 32768);
    assert.doesNotThrow(() => setCondition([], { ...valid, message: 'm'.repeat(32768) }, T0));
    refuses({ ...valid, message: 'm'.repeat(32769) }, 'message');
    refuses({ ...valid, message: '€'.repeat(10923) }, 'message'); // 10923 characters, 32769 bytes
  });

  it('refuses types that are not qualified names, statuses other than True/False/Unknown, negative generations', () => {
    refuses({ ...valid, type: '' }, 'type');
    refuses({ ...valid, type: 'not ready' }, 'type');
    refuses({ ...valid, type: 'Example.com/Ready' }, 'type');
    refuses({ ...valid, type: 'R'.repeat(64) }, 'type');
    refuses({ ...valid, status: 'Maybe' as ConditionStatus }, 'status');
    refuses({ ...valid, observedGeneration: -1 }, 'observedGeneration');
    refuses({ ...valid, observedGeneration: 1.5 }, 'observedGeneration');
    assert.doesNotThrow(() => setCondition([], { ...valid, type: 'example.com/Ready' }, T0));
  });
});

describe('conditions: queries', () => {
  const cs = setCondition(
    setCondition([], { type: 'Ready', status: 'True', reason: 'Ok' }, T0),
    { type: 'Degraded', status: 'False', reason: 'Fine' },
    T0,
  );

  it('isTrue and isFalse see only a present condition of that status; absent is neither', () => {
    assert.equal(isTrue(cs, 'Ready'), true);
    assert.equal(isFalse(cs, 'Ready'), false);
    assert.equal(isFalse(cs, 'Degraded'), true);
    assert.equal(isTrue(cs, 'Synced'), false);
    assert.equal(isFalse(cs, 'Synced'), false);
    assert.equal(isTrue(undefined, 'Ready'), false);
  });

  it('removeCondition drops one type and returns the same array when it was absent', () => {
    assert.deepEqual(
      removeCondition(cs, 'Ready').map((c) => c.type),
      ['Degraded'],
    );
    assert.equal(removeCondition(cs, 'Synced'), cs);
  });
});

describe('conditions: the apiserver agrees with setCondition', () => {
  let env: TestEnv;
  let ns: string;
  const PDB = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' } as const;

  before(async () => {
    env = await testEnv();
  });

  /** Writes `c` raw (unvalidated) into a PodDisruptionBudget's status: whose validation runs metav1 ValidateConditions. */
  async function apiserverAccepts(c: Condition): Promise<boolean> {
    try {
      await env.admin.patchStatus(PDB, 'pdb', ns, { type: 'merge', body: { status: { conditions: [c] } } });
      return true;
    } catch (err) {
      if (isApiError(err, ApiErrorReason.Invalid)) return false;
      throw err;
    }
  }

  function weAccept(c: Condition): boolean {
    try {
      setCondition([], c, T0);
      return true;
    } catch (err) {
      if (err instanceof InvalidConditionError) return false;
      throw err;
    }
  }

  it('property: a condition is refused by setCondition exactly when the apiserver refuses it', async (t) => {
    ns = await env.namespace(t, 'conditions');
    await env.admin.create({
      ...PDB,
      metadata: { name: 'pdb', namespace: ns },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'x' } } },
    });
    const anyReason = fc.oneof(
      reasonArb,
      fc.string({ maxLength: 12 }),
      fc.constantFrom('', 'Trailing:', 'Trailing,', 'Mid:dle', 'a'.repeat(1024), 'a'.repeat(1025)),
    );
    const anyType = fc.oneof(
      typeArb,
      fc.string({ maxLength: 10 }),
      fc.constantFrom('R'.repeat(63), 'R'.repeat(64), 'Example.com/Ready', 'a.b/C'),
    );
    const anyMessage = fc.constantFrom('', 'ok', 'm'.repeat(32768), 'm'.repeat(32769), '€'.repeat(10923));
    const seen = { accepted: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(anyType, anyReason, anyMessage, async (type, reason, message) => {
        const c: Condition = { type, status: 'True', reason, message, lastTransitionTime: timestamp(T0) };
        const ours = weAccept(c);
        assert.equal(
          ours,
          await apiserverAccepts(c),
          `type ${type.slice(0, 70)}, reason ${reason.slice(0, 70)}`,
        );
        seen[ours ? 'accepted' : 'refused']++;
      }),
      { numRuns: 120 },
    );
    assert.ok(seen.accepted > 10 && seen.refused > 10, `both outcomes exercised: ${JSON.stringify(seen)}`);
  });
});
