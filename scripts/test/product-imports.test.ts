/**
 * Product code imports no test support: the operators' sources (their local runners
 * included) and `npm run up` take what they need from `@operators/controlplane`, never
 * from `@operators/controlplane/testing` or a `test/` folder, so that what ships does
 * not depend on what only the tests may change.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');

function sources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) sources(p, out);
    else if (/\.(ts|js)$/.test(e)) out.push(p);
  }
  return out;
}

/** An import or re-export's module specifier, static or dynamic. */
const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;
const TEST_SUPPORT = /^@operators\/controlplane\/testing$|(?:^|\/)test\//;

test('operators/*/src and scripts/up.ts import nothing from test support', () => {
  const files = [
    ...readdirSync(join(ROOT, 'operators')).flatMap((op) => {
      const src = join(ROOT, 'operators', op, 'src');
      return statSync(src, { throwIfNoEntry: false })?.isDirectory() ? sources(src) : [];
    }),
    join(ROOT, 'scripts', 'up.ts'),
  ];
  assert.ok(files.length > 50, `too few product files found: ${files.length}`);
  const found = files.flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(SPECIFIER)]
      .map((m) => m[1] ?? '')
      .filter((spec) => TEST_SUPPORT.test(spec))
      .map((spec) => `${relative(ROOT, file)}: ${spec}`),
  );
  assert.deepEqual(found, [], 'product code imports test support');
});

test('the check catches what it looks for', () => {
  const bad = [
    "import { installCrds } from '@operators/controlplane/testing';",
    "import x from '../test/support.ts';",
  ];
  for (const line of bad) {
    const spec = [...line.matchAll(SPECIFIER)][0]?.[1] ?? '';
    assert.ok(TEST_SUPPORT.test(spec), line);
  }
  assert.ok(!TEST_SUPPORT.test('@operators/controlplane'));
  assert.ok(!TEST_SUPPORT.test('./testkit/crds.ts'));
});
