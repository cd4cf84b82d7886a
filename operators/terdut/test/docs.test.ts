/**
 * The user docs list every reason the code can report, and no other: the conditions
 * table of docs/terdut.md against the constants of `domain/reasons.ts` and the database
 * reasons of `domain/server`, and the events table against `EventReason`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EventReason, Reason } from '../src/domain/reasons.ts';
import { DatabaseReason } from '../src/domain/server/database.ts';

const docs = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'terdut.md'), 'utf8');

/** The first cells of the first table after `heading`, unquoted (header and rule skipped). */
function firstColumn(heading: string): string[] {
  const start = docs.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `docs/terdut.md has no "${heading}"`);
  const lines = docs.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const out: string[] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    out.push((line.slice(1).split('|')[0] ?? '').trim().replace(/^`|`$/g, ''));
  }
  return out;
}

describe('docs/terdut.md', () => {
  it('lists exactly the condition reasons the code reports', () => {
    assert.deepEqual(
      firstColumn('## Conditions').sort(),
      [...Object.values(Reason), ...Object.values(DatabaseReason)].sort(),
    );
  });

  it('lists exactly the event reasons the code records', () => {
    assert.deepEqual(firstColumn('## Events').sort(), Object.values(EventReason).sort());
  });

  it('writes out every route of the stand-in it documents', () => {
    for (const route of [
      '/api/bootstrap',
      '/api/users/{id}/api-keys',
      '/api/teams/{id}/oidc-groups',
      '/api/teams/{id}/escalation',
      '/api/teams/{id}/deadman-switches',
      '/api/teams/{id}/integrations/{iid}',
    ]) {
      assert.ok(docs.includes(route), `${route} is not in docs/terdut.md`);
    }
  });
});
