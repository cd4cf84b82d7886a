/**
 * The BlocklistSource CRD: the committed YAML is exactly what the TypeScript definition
 * generates, and the real apiserver refuses bad specs at admission with messages that
 * say what to change, and fills in the defaults.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError } from '@operators/kit';
import { BLOCKLIST_SOURCE, type BlocklistSource, blocklistSourceCrd } from '../src/api/blocklist-source.ts';
import { generated } from '../src/api/gen-crds.ts';

describe('the committed CRD', () => {
  it('is what gen-crds generates from src/api (run `npm run gen-crds -w @operators/exoledge` after a change)', () => {
    for (const { path, text } of generated()) {
      assert.equal(readFileSync(path, 'utf8'), text, `${path} is stale`);
    }
  });
});

describe('admission of a BlocklistSource', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
    await env.installCrds([blocklistSourceCrd()]);
  });

  const source = (spec: Record<string, unknown>, name = 'admission-check'): BlocklistSource =>
    ({ ...BLOCKLIST_SOURCE, metadata: { name }, spec }) as unknown as BlocklistSource;
  const ok = { url: 'https://lists.example/scanners.txt', kind: 'Certain' };

  it('refuses each bad spec with a message that names the field and the fix', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['not http', { ...ok, url: 'ftp://lists.example/x' }, /spec\.url.*absolute http/],
      ['relative url', { ...ok, url: '/x.txt' }, /spec\.url/],
      ['unknown kind', { ...ok, kind: 'Maybe' }, /spec\.kind/],
      ['budget of zero', { ...ok, maxEntries: 0 }, /spec\.maxEntries/],
      [
        'budget beyond the policy map',
        { ...ok, enforce: true, podSelector: {}, maxEntries: 65_537 },
        /65,536/,
      ],
      ['shard of zero', { ...ok, shardSize: 0 }, /spec\.shardSize/],
      ['shard over an object', { ...ok, shardSize: 30_001 }, /spec\.shardSize/],
      ['/33', { ...ok, minPrefixLength: 33 }, /spec\.minPrefixLength/],
      ['interval too short', { ...ok, refreshInterval: '30s' }, /spec\.refreshInterval.*from 1m to 168h/],
      ['interval in words', { ...ok, refreshInterval: '2 hours' }, /spec\.refreshInterval/],
      ['interval too long', { ...ok, refreshInterval: '169h' }, /spec\.refreshInterval/],
      ['enforced without a selector', { ...ok, enforce: true }, /spec\.podSelector.*which endpoints/],
      ['enforced Presumed', { ...ok, kind: 'Presumed', enforce: true }, /spec\.enforce.*Certain lists only/],
      [
        'bad selector',
        { ...ok, enforce: true, podSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] } },
        /In and NotIn need values/,
      ],
      ['bad label key', { ...ok, enforce: true, podSelector: { matchLabels: { 'a b': 'x' } } }, /label keys/],
    ];
    for (const [what, spec, message] of cases) {
      await assert.rejects(
        env.admin.create(source(spec), { dryRun: true }),
        (err: unknown) => isApiError(err, ApiErrorReason.Invalid) && message.test(err.message),
        what,
      );
    }
    await assert.rejects(
      env.admin.create(source(ok, `x${'y'.repeat(63)}`), { dryRun: true }),
      /at most 63 characters/,
    );
  });

  it('accepts a minimal spec and fills the defaults', async () => {
    const created = await env.admin.create(source(ok), { dryRun: true });
    assert.deepEqual(created.spec, {
      ...ok,
      enforce: false,
      maxEntries: 4000,
      shardSize: 10_000,
      refreshInterval: '2h',
    });
    await env.admin.create(
      source({
        ...ok,
        enforce: true,
        maxEntries: 65_536,
        minPrefixLength: 24,
        refreshInterval: '1h30m',
        podSelector: {
          matchLabels: { 'app.kubernetes.io/name': 'gateway' },
          matchExpressions: [{ key: 'tier', operator: 'Exists' }],
        },
      }),
      { dryRun: true },
    );
  });
});
