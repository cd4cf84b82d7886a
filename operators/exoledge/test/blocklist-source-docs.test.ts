/**
 * The user docs list every reason the code can report, and no other: the conditions
 * table of `docs/exoledge.md` against the constants of `reasons.ts`, condition by
 * condition, and the events table against `EventReason`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  BudgetReason,
  ConditionType,
  EventReason,
  ReadyReason,
  SourceReadReason,
} from '../src/domain/blocklist-source/index.ts';

const docs = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'exoledge.md'), 'utf8');

/** The rows of the first table after `heading`, as trimmed cells (header and rule skipped). */
function tableAfter(heading: string): string[][] {
  const start = docs.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `docs/exoledge.md has no "${heading}"`);
  const lines = docs.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
  }
  return rows;
}

const unquote = (cell: string): string => cell.replace(/^`|`$/g, '');

describe('the docs of BlocklistSource', () => {
  it('list, condition by condition, exactly the reasons the code reports', () => {
    const documented = new Map<string, Set<string>>();
    let type = '';
    for (const [t = '', , reason = ''] of tableAfter('### Conditions')) {
      if (t) type = unquote(t);
      const set = documented.get(type) ?? new Set<string>();
      set.add(unquote(reason));
      documented.set(type, set);
    }
    const inCode: Record<ConditionType, Record<string, string>> = {
      [ConditionType.Ready]: ReadyReason,
      [ConditionType.SourceRead]: SourceReadReason,
      [ConditionType.AllEntriesPublished]: BudgetReason,
    };
    assert.deepEqual([...documented.keys()].sort(), Object.values(ConditionType).sort());
    for (const [condition, reasons] of Object.entries(inCode)) {
      assert.deepEqual(
        [...(documented.get(condition) ?? [])].sort(),
        Object.values(reasons).sort(),
        `the reasons of ${condition}`,
      );
    }
  });

  it('list exactly the event reasons the code records', () => {
    const documented = tableAfter('### Events').map(([reason = '']) => unquote(reason));
    assert.deepEqual(documented.sort(), [...new Set(Object.values(EventReason))].sort());
  });
});
