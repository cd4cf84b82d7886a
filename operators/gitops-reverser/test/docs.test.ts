/**
 * The user docs list every condition type, reason and event reason the code can report,
 * and no other: the tables of docs/gitops-reverser.md against the constants of
 * `domain/reasons.ts` (the gate's six reasons included), and every flag and environment
 * variable of the operator process against its `--help`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  ConditionType,
  EventReason,
  Reason,
  ReasonClusterProviderNotFound,
  ReasonLegacySourceNamespace,
  ReasonNamespaceNotAuthorized,
  ReasonSourceNamespaceAllowed,
  ReasonSourceNamespaceNotAllowed,
  ReasonSupersededFieldStored,
} from '../src/domain/reasons.ts';

const docsPath = join(import.meta.dirname, '..', '..', '..', 'docs', 'gitops-reverser.md');
const docs = readFileSync(docsPath, 'utf8');

/** The operator process's `--help` (the kit's manager flags, then the operator's own). */
function usage(): string {
  const r = spawnSync(process.execPath, [join(import.meta.dirname, '..', 'src', 'main.ts'), '--help'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

/** The first cells of the first table after `heading`, unquoted (header and rule skipped). */
function firstColumn(heading: string): string[] {
  const start = docs.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `docs/gitops-reverser.md has no "${heading}"`);
  const lines = docs.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  assert.ok(first >= 0, `no table after "${heading}"`);
  const out: string[] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    out.push((line.slice(1).split('|')[0] ?? '').trim().replace(/^`|`$/g, ''));
  }
  return out;
}

/** The gate's reasons, spelled as the seed spells them (literals: the expected values). */
const GATE_REASONS = [
  'ClusterProviderNotFound',
  'NamespaceNotAuthorized',
  'SupersededFieldStored',
  'LegacySourceNamespace',
  'SourceNamespaceAllowed',
  'SourceNamespaceNotAllowed',
];

describe('docs/gitops-reverser.md', () => {
  it('spells the gate reasons as the seed does', () => {
    assert.deepEqual(
      [
        ReasonClusterProviderNotFound,
        ReasonNamespaceNotAuthorized,
        ReasonSupersededFieldStored,
        ReasonLegacySourceNamespace,
        ReasonSourceNamespaceAllowed,
        ReasonSourceNamespaceNotAllowed,
      ],
      GATE_REASONS,
    );
  });

  it('lists exactly the condition types the code writes', () => {
    assert.deepEqual(firstColumn('### Condition types').sort(), Object.values(ConditionType).sort());
  });

  it('lists exactly the condition reasons the code reports, the six gate reasons included', () => {
    assert.deepEqual(firstColumn('### Reasons').sort(), [...Object.values(Reason), ...GATE_REASONS].sort());
  });

  it('lists exactly the event reasons the code declares', () => {
    assert.deepEqual(firstColumn('## Events').sort(), Object.values(EventReason).sort());
  });

  it('names every flag and environment variable of the operator process', () => {
    const text = usage();
    const flags = [...new Set(text.match(/--[a-z][a-z-]*/g) ?? [])];
    assert.ok(flags.length >= 10, `USAGE lists too few flags: ${flags.join(' ')}`);
    const table = firstColumn('## The operator process').join(' ');
    for (const flag of flags) assert.ok(table.includes(flag), `${flag} is not in the flags table`);
    // Each flag line names its variable in parentheses: `(KUBECONFIG)`, `(GITOPS_REVERSER_…=false)`.
    const env = [...text.matchAll(/^\s+-{1,2}\S.*?\(([A-Z][A-Z0-9_]*)/gm)].map((m) => m[1] ?? '');
    assert.ok(env.length >= 8, `USAGE names too few variables: ${env.join(' ')}`);
    for (const name of env)
      assert.ok(docs.includes(`\`${name}`), `${name} is not in docs/gitops-reverser.md`);
  });

  it('names every metric the mirror registers', () => {
    const source = readFileSync(join(import.meta.dirname, '..', 'src', 'mirror', 'mirror.ts'), 'utf8');
    const names = [...source.matchAll(/'(gitops_reverser_[a-z_]+)'/g)].map((m) => m[1] ?? '');
    assert.ok(names.length >= 5, `mirror.ts registers too few metrics: ${names.join(' ')}`);
    assert.deepEqual(firstColumn('## Metrics').sort(), names.sort());
  });
});
