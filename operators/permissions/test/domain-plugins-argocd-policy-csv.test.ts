/**
 * Our blocks in Argo CD's policy.csv: expected texts are written out by hand; the
 * properties check foreign lines with a naive block stripper written here, and the
 * quoting with a reader written here after Go's encoding/csv (TrimLeadingSpace), the
 * parser Argo CD runs on each line.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { mergePolicyCsv, type PolicyOwner, policyLines } from '../src/domain/plugins/argocd-policy-csv.ts';

const ALICE: PolicyOwner = { kind: 'UserRole', namespace: 'team-a', name: 'alice', permission: 'apps-view' };
const DEVS: PolicyOwner = { kind: 'GroupRole', namespace: 'team-a', name: 'devs', permission: 'apps-view' };
const ALICE_EDIT: PolicyOwner = { ...ALICE, permission: 'apps-edit' };

const FOREIGN = 'p, role:org-admin, applications, *, */*, allow\ng, ops@example.com, role:org-admin\n';

describe('mergePolicyCsv', () => {
  it('creates the text with our block when there is none', () => {
    assert.equal(
      mergePolicyCsv(undefined, ALICE, ['p, alice@example.com, applications, get, team-a/*, allow']),
      '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
        'p, alice@example.com, applications, get, team-a/*, allow\n' +
        '# END permissions.shturval.tech team-a/UserRole/alice/apps-view\n',
    );
  });

  it('appends a new block after the lines of others', () => {
    assert.equal(
      mergePolicyCsv(FOREIGN, ALICE, ['p, alice, applications, get, */*, allow']),
      'p, role:org-admin, applications, *, */*, allow\n' +
        'g, ops@example.com, role:org-admin\n' +
        '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
        'p, alice, applications, get, */*, allow\n' +
        '# END permissions.shturval.tech team-a/UserRole/alice/apps-view\n',
    );
  });

  it('replaces a block in place, leaving lines before and after it alone', () => {
    const text =
      'p, x, applications, get, */*, allow\n' +
      '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
      'p, alice, applications, get, */*, allow\n' +
      '# END permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
      'p, y, clusters, get, *, allow\n';
    assert.equal(
      mergePolicyCsv(text, ALICE, [
        'p, alice, applications, sync, */*, allow',
        'p, alice, logs, get, */*, allow',
      ]),
      'p, x, applications, get, */*, allow\n' +
        '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
        'p, alice, applications, sync, */*, allow\n' +
        'p, alice, logs, get, */*, allow\n' +
        '# END permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
        'p, y, clusters, get, *, allow\n',
    );
  });

  it('removes only the owner block, keeping other owners and other permissions of the same role', () => {
    let text = mergePolicyCsv(FOREIGN, ALICE, ['p, alice, applications, get, */*, allow']);
    text = mergePolicyCsv(text, DEVS, ['p, devs, applications, get, */*, allow']);
    text = mergePolicyCsv(text, ALICE_EDIT, ['p, alice, applications, update, */*, allow']);
    assert.equal(
      mergePolicyCsv(text, ALICE, []),
      'p, role:org-admin, applications, *, */*, allow\n' +
        'g, ops@example.com, role:org-admin\n' +
        '# BEGIN permissions.shturval.tech team-a/GroupRole/devs/apps-view\n' +
        'p, devs, applications, get, */*, allow\n' +
        '# END permissions.shturval.tech team-a/GroupRole/devs/apps-view\n' +
        '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-edit\n' +
        'p, alice, applications, update, */*, allow\n' +
        '# END permissions.shturval.tech team-a/UserRole/alice/apps-edit\n',
    );
  });

  it('gives back text without a final newline exactly once our block is gone', () => {
    const foreign = 'p, x, applications, get, */*, allow';
    const added = mergePolicyCsv(foreign, ALICE, ['p, alice, logs, get, */*, allow']);
    assert.equal(
      added,
      'p, x, applications, get, */*, allow\n' +
        '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
        'p, alice, logs, get, */*, allow\n' +
        '# END permissions.shturval.tech team-a/UserRole/alice/apps-view',
    );
    assert.equal(mergePolicyCsv(added, ALICE, []), foreign);
  });

  it('keeps foreign lines someone added between and around our blocks', () => {
    let text = mergePolicyCsv('p, a, applications, get, */*, allow\n', ALICE, [
      'p, alice, logs, get, */*, allow',
    ]);
    text = `p, first, clusters, get, *, allow\n${text}p, last, projects, get, *, allow\n`;
    text = mergePolicyCsv(text, ALICE, ['p, alice, logs, get, team-b/*, allow']);
    assert.equal(
      text,
      'p, first, clusters, get, *, allow\n' +
        'p, a, applications, get, */*, allow\n' +
        '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
        'p, alice, logs, get, team-b/*, allow\n' +
        '# END permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
        'p, last, projects, get, *, allow\n',
    );
    assert.equal(
      mergePolicyCsv(text, ALICE, []),
      'p, first, clusters, get, *, allow\np, a, applications, get, */*, allow\np, last, projects, get, *, allow\n',
    );
  });

  it('leaves a BEGIN line without its END alone and the lines after it too', () => {
    const text =
      '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
      'p, someone, clusters, get, *, allow\n';
    assert.equal(
      mergePolicyCsv(text, ALICE, ['p, alice, logs, get, */*, allow']),
      '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
        'p, someone, clusters, get, *, allow\n' +
        '# BEGIN permissions.shturval.tech team-a/UserRole/alice/apps-view\n' +
        'p, alice, logs, get, */*, allow\n' +
        '# END permissions.shturval.tech team-a/UserRole/alice/apps-view\n',
    );
    assert.equal(mergePolicyCsv(text, ALICE, []), text);
  });

  it('keeps CRLF lines of others as they are', () => {
    const foreign = 'p, x, applications, get, */*, allow\r\ng, y, role:admin\r\n';
    const added = mergePolicyCsv(foreign, DEVS, ['p, devs, logs, get, */*, allow']);
    assert.ok(added.startsWith(foreign));
    assert.equal(mergePolicyCsv(added, DEVS, []), foreign);
  });

  it('removing a block that is not there changes nothing', () => {
    assert.equal(mergePolicyCsv(FOREIGN, ALICE, []), FOREIGN);
    assert.equal(mergePolicyCsv(undefined, ALICE, []), '');
  });
});

describe('policyLines', () => {
  it('writes one allow line per policy for the subject, each once', () => {
    assert.deepEqual(
      policyLines('alice@example.com', [
        { resource: 'applications', action: 'get', object: 'team-a/*' },
        { resource: 'logs', action: 'get', object: 'team-a/*' },
        { resource: 'applications', action: 'get', object: 'team-a/*' },
      ]),
      {
        kind: 'ok',
        lines: [
          'p, alice@example.com, applications, get, team-a/*, allow',
          'p, alice@example.com, logs, get, team-a/*, allow',
        ],
      },
    );
  });

  it('quotes a subject holding a comma or a quote, doubling its quotes', () => {
    assert.deepEqual(policyLines('CN=Dev, O="Acme"', [{ resource: 'logs', action: 'get', object: '*' }]), {
      kind: 'ok',
      lines: ['p, "CN=Dev, O=""Acme""", logs, get, *, allow'],
    });
  });

  it('refuses a subject with a line break', () => {
    const r = policyLines('alice\np, mallory, *, *, */*, allow', [
      { resource: 'logs', action: 'get', object: '*' },
    ]);
    assert.equal(r.kind, 'invalid');
    assert.match(r.kind === 'invalid' ? r.message : '', /subject .* contains a line break/);
  });

  it('Argo CD reads back exactly the subject it was given (Go encoding/csv, TrimLeadingSpace)', () => {
    fc.assert(
      fc.property(
        fc.string({
          minLength: 1,
          maxLength: 20,
          unit: fc.constantFrom('a', ',', '"', ' ', '@', 'é', '\t', 'x'),
        }),
        (subject) => {
          fc.pre(!/[\t]/.test(subject));
          const r = policyLines(subject, [{ resource: 'applications', action: 'get', object: '*/*' }]);
          assert.equal(r.kind, 'ok');
          const line = r.kind === 'ok' ? (r.lines[0] as string) : '';
          assert.deepEqual(goCsvRead(line.trim()), ['p', subject, 'applications', 'get', '*/*', 'allow']);
        },
      ),
    );
  });
});

/** Go's encoding/csv Reader.Read of one record with TrimLeadingSpace, strict quotes: a second implementation. */
function goCsvRead(line: string): string[] {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    while (i < line.length && (line[i] === ' ' || line[i] === '\t')) i++;
    if (line[i] === '"') {
      let value = '';
      i++;
      for (;;) {
        if (i >= line.length) throw new Error('extraneous or missing " in quoted-field');
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            value += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += line[i];
        i++;
      }
      fields.push(value);
      if (i < line.length && line[i] !== ',') throw new Error('extraneous " in field');
    } else {
      const end = line.indexOf(',', i);
      const value = end < 0 ? line.slice(i) : line.slice(i, end);
      if (value.includes('"')) throw new Error('bare " in non-quoted-field');
      fields.push(value);
      i = end < 0 ? line.length : end;
    }
    if (i >= line.length) return fields;
    i++; // the comma
  }
}

const OWNERS: readonly PolicyOwner[] = [ALICE, DEVS, ALICE_EDIT];
const idOf = (o: PolicyOwner): string => `${o.namespace}/${o.kind}/${o.name}/${o.permission}`;

/** The lines of `text` outside our blocks, written naively from the marker format. */
function foreignLines(text: string): string[] {
  const out: string[] = [];
  let inside: string | undefined;
  for (const line of text.split('\n')) {
    if (inside !== undefined) {
      if (line === `# END permissions.shturval.tech ${inside}`) inside = undefined;
      continue;
    }
    const begin = OWNERS.map(idOf).find((id) => line === `# BEGIN permissions.shturval.tech ${id}`);
    if (begin) inside = begin;
    else out.push(line);
  }
  return out;
}

/** The lines of one owner's block in `text`, or undefined when it has none. */
function blockLines(text: string, owner: PolicyOwner): string[] | undefined {
  const lines = text.split('\n');
  const b = lines.indexOf(`# BEGIN permissions.shturval.tech ${idOf(owner)}`);
  if (b < 0) return undefined;
  return lines.slice(b + 1, lines.indexOf(`# END permissions.shturval.tech ${idOf(owner)}`, b));
}

const foreignLine = fc.oneof(
  fc.constantFrom(
    'p, role:org-admin, applications, *, */*, allow',
    'g, ops, role:org-admin',
    '',
    '   ',
    '# a comment',
    '# BEGIN something else',
    '# END permissions.shturval.tec',
    'p, x, logs, get, */*, allow\r',
  ),
  fc.string({ maxLength: 12 }).filter((s) => !s.includes('\n')),
);
const foreignText = fc
  .tuple(fc.array(foreignLine, { maxLength: 8 }), fc.boolean())
  .map(([lines, trailing]) => lines.join('\n') + (trailing && lines.length > 0 ? '\n' : ''))
  .filter((t) => !t.split('\n').some((l) => /^# (BEGIN|END) permissions\.shturval\.tech /.test(l)));
const ourLine = fc
  .string({ maxLength: 10 })
  .map((s) => `p, ${s.replace(/[\r\n]/g, '')}, logs, get, */*, allow`);
const merge = fc.tuple(fc.integer({ min: 0, max: OWNERS.length - 1 }), fc.array(ourLine, { maxLength: 3 }));

describe('mergePolicyCsv properties', () => {
  it('foreign lines survive every merge in order, and removing all our blocks gives back the foreign text', () => {
    fc.assert(
      fc.property(
        foreignText,
        fc.array(merge, { maxLength: 12 }),
        fc.shuffledSubarray([0, 1, 2], { minLength: 3 }),
        (foreign, merges, removal) => {
          const expected = new Map<number, string[]>();
          let text: string = foreign;
          for (const [o, lines] of merges) {
            text = mergePolicyCsv(text, OWNERS[o] as PolicyOwner, lines);
            if (lines.length > 0) expected.set(o, lines);
            else expected.delete(o);
            assert.deepEqual(foreignLines(text), foreign.split('\n'));
            OWNERS.forEach((owner, i) => {
              assert.deepEqual(blockLines(text, owner), expected.get(i));
            });
          }
          for (const o of removal) text = mergePolicyCsv(text, OWNERS[o] as PolicyOwner, []);
          assert.equal(text, foreign);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('merging the same lines twice changes nothing the second time', () => {
    fc.assert(
      fc.property(foreignText, merge, (foreign, [o, lines]) => {
        const once = mergePolicyCsv(foreign, OWNERS[o] as PolicyOwner, lines);
        assert.equal(mergePolicyCsv(once, OWNERS[o] as PolicyOwner, lines), once);
      }),
    );
  });
});
