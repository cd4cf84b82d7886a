/** Rules are compiled at load; an invalid rule is refused alone, with every problem named. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  compileRules,
  derivePolicyRules,
  loadRules,
  parseRulesDocument,
  pluralOf,
} from '../src/domain/index.ts';
import { EXAMPLE_RULES_YAML } from '../src/example-rules.ts';

describe('rules', () => {
  it('the RFC example rule compiles, with its plurals derived', () => {
    const { rules, errors, documentError } = loadRules(EXAMPLE_RULES_YAML);
    assert.equal(documentError, undefined);
    assert.deepEqual(errors, []);
    assert.equal(rules.length, 1);
    const r = rules[0]!;
    assert.equal(r.name, 'authentik-user-stalwart-account');
    assert.equal(r.source.resource, 'authentikusers');
    assert.equal(r.target.resource, 'stalwartaccounts');
    assert.deepEqual(r.target.immutable, ['spec.name']);
    assert.equal(r.onRemoval.then, 'Keep');
  });

  it('a CEL syntax error refuses that rule alone, with line, column and what was expected', () => {
    const bad = EXAMPLE_RULES_YAML.replace('source.spec.username', 'source.spec.username +');
    const other = EXAMPLE_RULES_YAML.replace('links:\n', '').replace(
      'authentik-user-stalwart-account',
      'second',
    );
    const { rules, errors } = loadRules(bad + other);
    assert.deepEqual(
      rules.map((r) => r.name),
      ['second'],
    );
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.link, 'authentik-user-stalwart-account');
    assert.match(errors[0]!.problems.join('\n'), /target\.spec\.name: 1:\d+: .*/);
  });

  it('an undeclared variable is a type error (mapping leaves see only source, safe only target)', () => {
    const { errors } = loadRules(
      EXAMPLE_RULES_YAML.replace('target.spec.state == "Locked"', 'source.spec.state == "Locked"'),
    );
    assert.match(errors[0]!.problems.join('\n'), /onRemoval\.safe: .*source/);
  });

  it('an immutable field absent from the mapping, a bad then, a reserved header: every problem listed', () => {
    const y = EXAMPLE_RULES_YAML.replace('immutable: [spec.name]', 'immutable: [spec.nope, metadata.name]')
      .replace('then: Keep', 'then: Drop')
      .replace('header: stalwart', 'header: state');
    const { errors, rules } = loadRules(y);
    assert.equal(rules.length, 0);
    const text = errors[0]!.problems.join('\n');
    assert.match(text, /spec\.nope is not a field of the mapping/);
    assert.match(text, /metadata\.name is not a field of the mapping/);
    assert.match(text, /then must be Keep or Delete/);
    assert.match(text, /header "state" is reserved/);
  });

  it('malformed YAML is a document error, not a crash', () => {
    const r = loadRules('links:\n  - name: [unclosed\n');
    assert.match(r.documentError ?? '', /malformed YAML/);
    assert.equal(parseRulesDocument('links: 3').ok, false);
  });

  it('a duplicate name refuses the later rule; a rule without name is named by its index', () => {
    const doc = parseRulesDocument(EXAMPLE_RULES_YAML);
    assert.ok(doc.ok);
    const { rules, errors } = compileRules([...doc.links, ...doc.links, { header: 'x' }]);
    assert.equal(rules.length, 1);
    assert.equal(errors[0]!.link, 'authentik-user-stalwart-account');
    assert.equal(errors[1]!.link, 'links[2]');
    assert.match(errors[1]!.problems.join('\n'), /name is required/);
  });

  it('plurals follow the CRD default', () => {
    assert.equal(pluralOf('StalwartAccount'), 'stalwartaccounts');
    assert.equal(pluralOf('Policy'), 'policies');
    assert.equal(pluralOf('Address'), 'addresses');
  });

  describe('RFC 0002 D4: a mapping reads and chooses, it does not loop', () => {
    /** The example rule with its `name:` leaf and one more `spec` field, `extra`. */
    const withLeaves = (name: string, extra: string): string =>
      EXAMPLE_RULES_YAML.replace('name: { cel: source.metadata.name }', `name: ${name}`).replace(
        '        deletionPolicy: Orphan\n',
        `        deletionPolicy: Orphan\n        extra: ${extra}\n`,
      );
    const problemsOf = (yaml: string): string[] => {
      const { rules, errors } = loadRules(yaml);
      if (errors.length === 0) assert.equal(rules.length, 1);
      return errors.flatMap((e) => e.problems);
    };
    const cel = (expr: string): string => `{ cel: ${JSON.stringify(expr)} }`;

    it('a mapping leaf that loops is refused, naming the leaf, the macro and the rule', () => {
      const problems = problemsOf(
        withLeaves('{ cel: source.metadata.name }', cel('source.spec.groups.map(g, g.name)')),
      );
      assert.deepEqual(problems, [
        'target.spec.extra: map() at 1:1 loops over a collection: refused by RFC 0002 D4, a mapping reads fields and chooses with operators and the ternary, it does not loop',
      ]);
    });

    it('every looping macro is refused, at any depth of the mapping', () => {
      const loops: [string, string][] = [
        ['source.spec.groups.all(g, g != "")', 'all'],
        ['source.spec.groups.exists(g, g == "admin")', 'exists'],
        ['source.spec.groups.exists_one(g, g == "admin")', 'exists_one'],
        ['source.spec.groups.filter(g, g != "")', 'filter'],
        ['source.spec.groups.map(g, g != "", g)', 'map'],
        ['source.metadata.labels.exists(k, v, v == "x")', 'exists'],
        ['source.spec.groups.transformList(i, g, g + "!")', 'transformList'],
        ['source.metadata.labels.transformMap(k, v, v + "!")', 'transformMap'],
        ['source.spec.groups.sortBy(g, g)', 'sortBy'],
        ['source.?spec.nick.optMap(n, n + "!")', 'optMap'],
      ];
      for (const [expr, macro] of loops) {
        const problems = problemsOf(
          withLeaves('{ cel: source.metadata.name }', `{ deep: [1, ${cel(expr)}] }`),
        );
        assert.equal(problems.length, 1, expr);
        assert.match(
          problems[0]!,
          new RegExp(`^target\\.spec\\.extra\\.deep\\[1\\]: ${macro}\\(\\) at 1:\\d+ loops`),
        );
      }
    });

    it('has(), string functions and the ternary stay allowed; a field named map or a string "exists(" is no loop', () => {
      const allowed = [
        'has(source.spec.nick) ? source.spec.nick : source.spec.username',
        'source.spec.username.lowerAscii().replace(".", "-") + "@" + source.metadata.namespace',
        'source.metadata.annotations["weebo.io/nick"]',
        'source.spec.map',
        'source.spec.filter.exists',
        '"exists(c, true)"',
        'source.spec.username + ".map(x, x)"',
        'source.spec.isActive && !(source.spec.level < 3) ? [source.spec.a, source.spec.b] : [source.spec.c]',
      ];
      for (const expr of allowed) assert.deepEqual(problemsOf(withLeaves('fixed', cel(expr))), [], expr);
    });

    it('onRemoval.safe keeps its macros: the RFC example uses exists() on the conditions', () => {
      assert.deepEqual(problemsOf(EXAMPLE_RULES_YAML), []);
      assert.match(EXAMPLE_RULES_YAML, /conditions\.exists\(c,/);
    });

    it('the target name reads only fields that never change, or is a literal', () => {
      for (const name of [
        'fixed-name',
        cel('source.metadata.name'),
        cel('source.metadata.name + "-mail"'),
        cel('source.metadata.namespace + "-" + source.metadata.name.lowerAscii()'),
        cel('source.kind.lowerAscii() + "-" + source.metadata.uid'),
        cel('source.apiVersion.size() > 20 ? source.metadata.uid : source.metadata.name'),
      ])
        assert.deepEqual(problemsOf(withLeaves(name, '1')), [], name);
    });

    it('a target name that reads a field that can change is refused: it would call for a rename', () => {
      const problems = problemsOf(withLeaves(cel('source.spec.username'), '1'));
      assert.deepEqual(problems, [
        'target.name: reads source.spec.username, which can change: the target would have to be renamed, and weebo-link never renames one. The name may read only source.metadata.name, source.metadata.namespace, source.metadata.uid, source.kind and source.apiVersion',
      ]);
      for (const [expr, read] of [
        ['source.metadata.name + source.metadata.labels.team', 'source.metadata.labels.team'],
        ['source.metadata.generateName + "x"', 'source.metadata.generateName'],
        ['has(source.spec.alias) ? "a" : source.metadata.name', 'source.spec.alias'],
        ['source["metadata"]["name"]', 'source'],
        ['source.metadata["name"]', 'source.metadata'],
        ['string(source)', 'source'],
      ]) {
        const p = problemsOf(withLeaves(cel(expr!), '1'));
        assert.equal(p.length, 1, expr);
        assert.ok(p[0]!.startsWith(`target.name: reads ${read}, which can change`), `${expr}: ${p[0]}`);
      }
    });

    it('a name leaf that loops is refused for the loop too', () => {
      const problems = problemsOf(
        withLeaves(cel('source.metadata.name + (["a"].exists(x, x == "a") ? "-a" : "")'), '1'),
      );
      assert.equal(problems.length, 1);
      assert.match(problems[0]!, /^target\.name: exists\(\) at 1:\d+ loops over a collection/);
    });

    it('reads, operators and ternaries are accepted in a mapping leaf; the same inside a macro is refused', () => {
      const field = fc.constantFrom('name', 'map', 'exists', 'filter', 'all', 'spec', 'x');
      const read = fc.array(field, { minLength: 1, maxLength: 3 }).map((p) => `source.${p.join('.')}`);
      // Typed as the checker types them: `source` is dyn, comparisons and `!` give bools.
      const { dyn, bool } = fc.letrec<{ dyn: string; bool: string }>((tie) => ({
        dyn: fc.oneof(
          { depthSize: 'small' },
          read,
          fc
            .tuple(tie('dyn'), fc.constantFrom('+', '-', '*'), tie('dyn'))
            .map(([a, op, b]) => `(${a} ${op} ${b})`),
          fc.tuple(tie('bool'), tie('dyn'), tie('dyn')).map(([c, a, b]) => `(${c} ? ${a} : ${b})`),
        ),
        bool: fc.oneof(
          { depthSize: 'small' },
          read.map((r) => `has(${r})`),
          fc
            .tuple(tie('dyn'), fc.constantFrom('==', '!=', '<', '>='), tie('dyn'))
            .map(([a, op, b]) => `(${a} ${op} ${b})`),
          fc
            .tuple(tie('bool'), fc.constantFrom('&&', '||'), tie('bool'))
            .map(([a, op, b]) => `(${a} ${op} ${b})`),
          tie('bool').map((a) => `!${a}`),
        ),
      }));
      const expr = fc.oneof(dyn, bool);
      const wrap = fc.constantFrom<[string, (e: string) => string]>(
        ['map', (e) => `source.spec.l.map(x, ${e})`],
        ['exists', (e) => `source.spec.l.exists(x, ${e})`],
        ['filter', (e) => `source.spec.l.filter(x, ${e})`],
        ['all', (e) => `source.spec.m.all(k, v, ${e})`],
        ['transformMap', (e) => `source.spec.m.transformMap(k, v, ${e})`],
      );
      fc.assert(
        fc.property(expr, wrap, (e, [macro, w]) => {
          assert.deepEqual(problemsOf(withLeaves('fixed', cel(e))), [], e);
          const refused = problemsOf(withLeaves('fixed', cel(w(e))));
          assert.equal(refused.length, 1, w(e));
          assert.match(refused[0]!, new RegExp(`^target\\.spec\\.extra: ${macro}\\(\\) at 1:1 loops`));
        }),
        { numRuns: 60 },
      );
    });
  });

  it('RBAC derived by namespace: sources read where read, targets written only in their namespace, delete only with then: Delete', () => {
    const keep = loadRules(EXAMPLE_RULES_YAML).rules;
    const events = { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] };
    assert.deepEqual(derivePolicyRules(keep), {
      auth: [
        { apiGroups: ['authentik.weebo.io'], resources: ['authentikusers'], verbs: ['get', 'list', 'watch'] },
        events,
      ],
      mail: [
        events,
        {
          apiGroups: ['stalwart.weebo.io'],
          resources: ['stalwartaccounts'],
          verbs: ['create', 'get', 'list', 'patch', 'watch'],
        },
      ],
    });
    const del = loadRules(EXAMPLE_RULES_YAML.replace('then: Keep', 'then: Delete')).rules;
    assert.deepEqual(derivePolicyRules(del).mail?.[1]?.verbs, [
      'create',
      'delete',
      'get',
      'list',
      'patch',
      'watch',
    ]);
    assert.deepEqual(derivePolicyRules(del).auth, derivePolicyRules(keep).auth, 'no delete on sources');
  });
});
