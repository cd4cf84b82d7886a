/** Rules are compiled at load; an invalid rule is refused alone, with every problem named. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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

  it('RBAC derived: read on sources, read/create/patch on targets, delete only with then: Delete, nothing else', () => {
    const keep = loadRules(EXAMPLE_RULES_YAML).rules;
    assert.deepEqual(derivePolicyRules(keep), [
      { apiGroups: ['authentik.weebo.io'], resources: ['authentikusers'], verbs: ['get', 'list', 'watch'] },
      {
        apiGroups: ['stalwart.weebo.io'],
        resources: ['stalwartaccounts'],
        verbs: ['create', 'get', 'list', 'patch', 'watch'],
      },
    ]);
    const del = loadRules(EXAMPLE_RULES_YAML.replace('then: Keep', 'then: Delete')).rules;
    assert.ok(derivePolicyRules(del)[1]!.verbs.includes('delete'));
  });
});
