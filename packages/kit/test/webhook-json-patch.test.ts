/**
 * The JSON patch a mutating webhook answers when its handler returns the desired object:
 * applied to the request's object, it must give exactly the desired object. The oracle
 * is an RFC 6902 applier written here from the RFC, independent of the diff.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type JsonPatchOp, type JsonValue, jsonPatchDiff } from '@operators/kit';
import fc from 'fast-check';

type Mutable = null | boolean | number | string | Mutable[] | { [k: string]: Mutable };

/** RFC 6901: `~1` is `/`, then `~0` is `~`. */
function segments(path: string): string[] {
  if (path === '') return [];
  assert.ok(path.startsWith('/'), `pointer ${path} must start with /`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** RFC 6902 §4.1–4.3, strict: every error the RFC names fails the test. */
function applyPatch(doc: Mutable, ops: readonly JsonPatchOp[]): Mutable {
  let root = structuredClone(doc);
  for (const op of ops) {
    const segs = segments(op.path);
    if (segs.length === 0) {
      assert.equal(op.op, 'replace', 'only replace may target the root');
      root = structuredClone((op as { value: Mutable }).value);
      continue;
    }
    let parent: Mutable = root;
    for (const s of segs.slice(0, -1)) {
      if (Array.isArray(parent)) parent = parent[Number(s)] as Mutable;
      else if (parent && typeof parent === 'object') {
        assert.ok(Object.hasOwn(parent, s), `${op.path}: missing ${s}`);
        parent = parent[s] as Mutable;
      } else assert.fail(`${op.path}: ${s} is inside a scalar`);
    }
    const last = segs[segs.length - 1] as string;
    if (Array.isArray(parent)) {
      const i = last === '-' ? parent.length : Number(last);
      assert.ok(/^(0|[1-9]\d*|-)$/.test(last), `${op.path}: bad index`);
      if (op.op === 'add') {
        assert.ok(i <= parent.length, `${op.path}: add past the end`);
        parent.splice(i, 0, structuredClone(op.value as Mutable));
      } else {
        assert.ok(i < parent.length, `${op.path}: no element`);
        if (op.op === 'remove') parent.splice(i, 1);
        else parent[i] = structuredClone((op as { value: Mutable }).value);
      }
    } else if (parent && typeof parent === 'object') {
      if (op.op === 'add') parent[last] = structuredClone(op.value as Mutable);
      else {
        assert.ok(Object.hasOwn(parent, last), `${op.path}: ${op.op} of a missing member`);
        if (op.op === 'remove') delete parent[last];
        else parent[last] = structuredClone((op as { value: Mutable }).value);
      }
    } else assert.fail(`${op.path}: parent is a scalar`);
  }
  return root;
}

// Few keys, some needing escapes, so that documents overlap and the diff recurses deep.
const key = fc.constantFrom('a', 'b', 'app.kubernetes.io/name', '~', '~1', '/', '', 'c~0/d');
const { value: anyJson } = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, 1, 'x', ''),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 5 }),
  ),
}));
// As parsed from a request: plain objects (fast-check's dictionaries have no prototype).
const json = anyJson.map((v) => JSON.parse(JSON.stringify(v)) as JsonValue);

describe('the JSON patch of a mutating webhook', () => {
  it('turns the request object into the desired object, for any pair of documents', () => {
    fc.assert(
      fc.property(json, json, (from, to) => {
        const patched = applyPatch(from as Mutable, jsonPatchDiff(from, to));
        assert.deepEqual(patched, to);
      }),
      { numRuns: 2000 },
    );
  });

  it('is empty when nothing changes, so an idempotent mutation patches nothing', () => {
    fc.assert(fc.property(json, (doc) => jsonPatchDiff(doc, structuredClone(doc)).length === 0));
  });

  it('escapes label keys with / and ~ as RFC 6901 pointers', () => {
    const ops = jsonPatchDiff(
      { metadata: { labels: { 'app.kubernetes.io/name': 'a' } } },
      { metadata: { labels: { 'app.kubernetes.io/name': 'b', 'x~y': 'c' } } },
    );
    assert.deepEqual(ops, [
      { op: 'replace', path: '/metadata/labels/app.kubernetes.io~1name', value: 'b' },
      { op: 'add', path: '/metadata/labels/x~0y', value: 'c' },
    ]);
  });

  it('removes array elements from the end backwards, so each index is valid when applied', () => {
    assert.deepEqual(jsonPatchDiff({ a: [1, 2, 3, 4] }, { a: [1, 9] }), [
      { op: 'replace', path: '/a/1', value: 9 },
      { op: 'remove', path: '/a/3' },
      { op: 'remove', path: '/a/2' },
    ]);
  });
});
