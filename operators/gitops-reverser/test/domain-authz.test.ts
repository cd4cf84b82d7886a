/**
 * The ClusterProvider namespace-admission gate, rule by rule, as gitops-reverser's
 * `authz` package documents it: the order of checks, what is a denial and what is an
 * error, the reasons spelled exactly, the message key phrases, and which reads each
 * decision makes. Expected values are literals.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type AuthzReader,
  type ClusterProviderPolicy,
  GateReadError,
  type GitTargetRef,
  gitTargetAdmitted,
  resolveWatchRuleSourceScope,
  supersededFieldRefusal,
  type WatchRuleItems,
} from '../src/domain/authz/index.ts';

type Spec = NonNullable<ClusterProviderPolicy['spec']>;

/** A reader over literal objects that records every read and can fail one. */
function reader(opts: {
  providers?: Record<string, Spec>;
  namespaces?: Record<string, Record<string, string>>;
  fail?: 'provider' | 'namespace';
}): AuthzReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async clusterProvider(name) {
      reads.push(`ClusterProvider/${name}`);
      if (opts.fail === 'provider')
        throw new Error('clusterproviders.configbutler.ai "x" is forbidden (403)');
      const spec = opts.providers?.[name];
      return spec ? { metadata: { name }, spec } : undefined;
    },
    async namespaceLabels(name) {
      reads.push(`Namespace/${name}`);
      if (opts.fail === 'namespace') throw new Error('etcdserver: request timed out');
      return opts.namespaces?.[name];
    },
  };
}

function target(namespace: string, provider?: string): GitTargetRef {
  return {
    metadata: { namespace, name: 't' },
    spec: provider ? { clusterProviderRef: { name: provider } } : {},
  };
}

describe('gitTargetAdmitted', () => {
  type Case = {
    name: string;
    providers?: Record<string, Spec>;
    namespaces?: Record<string, Record<string, string>>;
    target: GitTargetRef;
    allowed: boolean;
    reason?: string;
    message?: RegExp;
    reads: string[];
  };
  const cases: Case[] = [
    {
      name: 'rule 1: an omitted ref means "default", and a missing default is ClusterProviderNotFound before any policy read',
      namespaces: { a: {} },
      target: target('a'),
      allowed: false,
      reason: 'ClusterProviderNotFound',
      message: /^referenced ClusterProvider "default" was not found/,
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 1: a named provider that does not exist is ClusterProviderNotFound',
      providers: { default: { accessFrom: { selector: {} } } },
      target: target('a', 'remote'),
      allowed: false,
      reason: 'ClusterProviderNotFound',
      message: /referenced ClusterProvider "remote" was not found/,
      reads: ['ClusterProvider/remote'],
    },
    {
      name: 'rule 2: a provider storing allowedNamespaces is SupersededFieldStored before the Namespace read',
      providers: { default: { accessFrom: { selector: {} }, allowedNamespaces: ['a'] } },
      target: target('a'),
      allowed: false,
      reason: 'SupersededFieldStored',
      message: /spec\.allowedNamespaces \(replaced by spec\.accessFrom/,
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 2: an empty {} stored in allowedNamespaces is refused too',
      providers: { default: { accessFrom: { names: ['a'] }, allowedNamespaces: {} } },
      target: target('a'),
      allowed: false,
      reason: 'SupersededFieldStored',
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 2: a stored allowSourceNamespaceOverride: true is refused',
      providers: { default: { accessFrom: { selector: {} }, allowSourceNamespaceOverride: true } },
      target: target('a'),
      allowed: false,
      reason: 'SupersededFieldStored',
      message: /spec\.allowSourceNamespaceOverride \(replaced by spec\.allowAnySourceNamespace\)/,
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 2: a stored allowSourceNamespaceOverride: false (the old default) is not refused',
      providers: { default: { accessFrom: { selector: {} }, allowSourceNamespaceOverride: false } },
      namespaces: { a: {} },
      target: target('a'),
      allowed: true,
      reads: ['ClusterProvider/default', 'Namespace/a'],
    },
    {
      name: 'rule 3: no accessFrom admits nothing',
      providers: { default: {} },
      namespaces: { a: {} },
      target: target('a'),
      allowed: false,
      reason: 'NamespaceNotAuthorized',
      message: /^namespace "a" is not permitted to reference ClusterProvider "default" \(spec\.accessFrom\)/,
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 3: accessFrom: {} admits nothing',
      providers: { default: { accessFrom: {} } },
      target: target('a'),
      allowed: false,
      reason: 'NamespaceNotAuthorized',
      message: /deny by default/,
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 3: a name admits exactly that namespace, without reading it',
      providers: { default: { accessFrom: { names: ['a'] } } },
      target: target('a'),
      allowed: true,
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 3: names are exact (no prefix match)',
      providers: { default: { accessFrom: { names: ['a'] } } },
      target: target('ab'),
      allowed: false,
      reason: 'NamespaceNotAuthorized',
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 3: selector: {} admits every namespace',
      providers: { default: { accessFrom: { selector: {} } } },
      namespaces: { a: {} },
      target: target('a'),
      allowed: true,
      reads: ['ClusterProvider/default', 'Namespace/a'],
    },
    {
      name: 'rule 3: names OR selector: a labelled namespace not named is admitted',
      providers: { default: { accessFrom: { names: ['b'], selector: { matchLabels: { mirror: 'yes' } } } } },
      namespaces: { a: { mirror: 'yes' } },
      target: target('a'),
      allowed: true,
      reads: ['ClusterProvider/default', 'Namespace/a'],
    },
    {
      name: 'rule 3: a namespace whose labels do not match is NamespaceNotAuthorized',
      providers: { default: { accessFrom: { selector: { matchLabels: { mirror: 'yes' } } } } },
      namespaces: { a: { mirror: 'no' } },
      target: target('a'),
      allowed: false,
      reason: 'NamespaceNotAuthorized',
      message: /do not match spec\.accessFrom\.selector/,
      reads: ['ClusterProvider/default', 'Namespace/a'],
    },
    {
      name: 'rule 4: a NotFound namespace is evaluated with empty labels: a selector does not match it',
      providers: { default: { accessFrom: { selector: { matchLabels: { mirror: 'yes' } } } } },
      target: target('ghost'),
      allowed: false,
      reason: 'NamespaceNotAuthorized',
      reads: ['ClusterProvider/default', 'Namespace/ghost'],
    },
    {
      name: 'rule 4: a NotFound namespace is matched by a selector of DoesNotExist (empty labels, not an error)',
      providers: {
        default: { accessFrom: { selector: { matchExpressions: [{ key: 'x', operator: 'DoesNotExist' }] } } },
      },
      target: target('ghost'),
      allowed: true,
      reads: ['ClusterProvider/default', 'Namespace/ghost'],
    },
    {
      name: 'rule 4: an invalid selector is NamespaceNotAuthorized, naming what is invalid',
      providers: {
        default: { accessFrom: { selector: { matchExpressions: [{ key: 'x', operator: 'In' }] } } },
      },
      namespaces: { a: { x: 'y' } },
      target: target('a'),
      allowed: false,
      reason: 'NamespaceNotAuthorized',
      message: /selector is invalid: matchExpressions\[0\]: operator In needs at least one value/,
      reads: ['ClusterProvider/default', 'Namespace/a'],
    },
    {
      name: 'rule 4: an invalid selector does not deny a namespace a name already matched',
      providers: {
        default: {
          accessFrom: { names: ['a'], selector: { matchExpressions: [{ key: 'x', operator: 'Bogus' }] } },
        },
      },
      target: target('a'),
      allowed: true,
      reads: ['ClusterProvider/default'],
    },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const r = reader({ providers: c.providers, namespaces: c.namespaces });
      const d = await gitTargetAdmitted(r, c.target);
      assert.equal(d.allowed, c.allowed);
      if (d.allowed) {
        assert.deepEqual(Object.keys(d), ['allowed'], 'an admission carries no reason and no message');
      } else {
        assert.equal(d.reason, c.reason);
        assert.ok(d.message.length > 0, 'a denial always carries a message');
        if (c.message) assert.match(d.message, c.message);
      }
      assert.deepEqual(r.reads, c.reads);
    });
  }

  it('rule 5: a failed provider read is an error with no decision, not a denial', async () => {
    const r = reader({ fail: 'provider' });
    await assert.rejects(gitTargetAdmitted(r, target('a')), (e: unknown) => {
      assert.ok(e instanceof GateReadError);
      assert.match(e.message, /cannot read ClusterProvider "default": .*forbidden/);
      return true;
    });
  });

  it('rule 5: a failed Namespace read is an error with no decision, not a denial', async () => {
    const r = reader({ providers: { default: { accessFrom: { selector: {} } } }, fail: 'namespace' });
    await assert.rejects(gitTargetAdmitted(r, target('a')), GateReadError);
  });

  it('admits exactly when a name matches or a valid selector matches the labels (a second, naive implementation)', async () => {
    const ns = fc.constantFrom('a', 'b', 'c');
    const labels = fc.dictionary(fc.constantFrom('team', 'env'), fc.constantFrom('x', 'y'));
    await fc.assert(
      fc.asyncProperty(
        ns,
        fc.option(fc.uniqueArray(ns), { nil: undefined }),
        fc.option(fc.dictionary(fc.constantFrom('team', 'env'), fc.constantFrom('x', 'y')), {
          nil: undefined,
        }),
        labels,
        async (namespace, names, matchLabels, nsLabels) => {
          const accessFrom = { names, selector: matchLabels ? { matchLabels } : undefined };
          const r = reader({ providers: { default: { accessFrom } }, namespaces: { [namespace]: nsLabels } });
          const d = await gitTargetAdmitted(r, target(namespace));
          const expected =
            (names ?? []).includes(namespace) ||
            (matchLabels !== undefined && Object.entries(matchLabels).every(([k, v]) => nsLabels[k] === v));
          assert.equal(d.allowed, expected);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('resolveWatchRuleSourceScope', () => {
  const rule = (namespace: string, ...sourceNamespaces: (string | undefined)[]): WatchRuleItems => ({
    metadata: { namespace },
    spec: {
      rules: sourceNamespaces.map((s, i) => ({
        resources: i === 0 ? ['configmaps'] : ['secrets', 'services'],
        ...(s === undefined ? {} : { sourceNamespace: s }),
      })),
    },
  });
  const open: Spec = { accessFrom: { selector: {} }, allowAnySourceNamespace: true };

  it('rule 6: items on the own namespace (omitted or named) are LegacySourceNamespace with no provider read', async () => {
    const r = reader({});
    const s = await resolveWatchRuleSourceScope(r, rule('team-a', undefined, 'team-a'), target('team-a'));
    assert.equal(s.admitted(), true);
    assert.equal(s.reason, 'LegacySourceNamespace');
    assert.deepEqual(
      s.items.map((i) => [i.reason, i.namespaces]),
      [
        ['LegacySourceNamespace', ['team-a']],
        ['LegacySourceNamespace', ['team-a']],
      ],
    );
    assert.deepEqual(r.reads, []);
    assert.equal(s.fingerprint(), '0=team-a;1=team-a');
  });

  it('rule 9: zero items is LegacySourceNamespace', async () => {
    const s = await resolveWatchRuleSourceScope(reader({}), rule('a'), target('a'));
    assert.equal(s.reason, 'LegacySourceNamespace');
    assert.equal(s.admitted(), true);
    assert.equal(s.fingerprint(), '');
  });

  const denials: [string, Record<string, Spec> | undefined, RegExp][] = [
    ['the provider does not exist', undefined, /referenced ClusterProvider "default" was not found/],
    [
      "the provider does not admit the target's namespace",
      { default: { accessFrom: { names: ['other'] }, allowAnySourceNamespace: true } },
      /namespace "team-a" is not permitted to reference ClusterProvider "default" \(spec\.accessFrom\)/,
    ],
    [
      'the provider does not set allowAnySourceNamespace',
      { default: { accessFrom: { selector: {} } } },
      /does not set spec\.allowAnySourceNamespace/,
    ],
    [
      'the provider stores a superseded field',
      { default: { ...open, allowSourceNamespaceOverride: true } },
      /stores spec\.allowSourceNamespaceOverride/,
    ],
  ];
  for (const sourceNamespace of ['other', '*']) {
    for (const [why, providers, message] of denials) {
      it(`rule 7: sourceNamespace "${sourceNamespace}" is SourceNamespaceNotAllowed when ${why}`, async () => {
        const r = reader({ providers, namespaces: { 'team-a': {} } });
        const s = await resolveWatchRuleSourceScope(
          r,
          rule('team-a', undefined, sourceNamespace),
          target('team-a'),
        );
        assert.equal(s.admitted(), false);
        assert.equal(s.reason, 'SourceNamespaceNotAllowed');
        assert.equal(s.items[0]?.allowed, true);
        assert.equal(s.items[1]?.allowed, false);
        assert.equal(s.items[1]?.reason, 'SourceNamespaceNotAllowed');
        assert.ok(
          s.message.startsWith(
            `spec.rules[1] (resources secrets,services, sourceNamespace "${sourceNamespace}"): `,
          ),
          s.message,
        );
        assert.match(s.message, message);
        assert.deepEqual(s.namespacesFor(1), []);
        assert.equal(s.fingerprint(), '0=team-a;1=', 'a denied item renders i=');
      });
    }
  }

  it('rule 8: an allowed "*" resolves to the one cluster-wide stream "", a name to itself; SourceNamespaceAllowed', async () => {
    const r = reader({ providers: { default: open }, namespaces: { 'team-a': {} } });
    const s = await resolveWatchRuleSourceScope(
      r,
      rule('team-a', '*', 'team-b', undefined),
      target('team-a'),
    );
    assert.equal(s.admitted(), true);
    assert.equal(s.reason, 'SourceNamespaceAllowed');
    assert.deepEqual(s.namespacesFor(0), ['']);
    assert.deepEqual(s.namespacesFor(1), ['team-b']);
    assert.deepEqual(s.namespacesFor(2), ['team-a']);
    assert.equal(s.fingerprint(), '0=;1=team-b;2=team-a');
    assert.match(
      s.message,
      /^spec\.rules\[0\] .*allowed by ClusterProvider "default" \(spec\.allowAnySourceNamespace\)/,
    );
  });

  it('rule 8: the provider (and the namespace) are read once per rule, however many items override', async () => {
    const r = reader({ providers: { default: open }, namespaces: { 'team-a': {} } });
    await resolveWatchRuleSourceScope(r, rule('team-a', 'b', 'c', '*', 'd'), target('team-a'));
    assert.deepEqual(r.reads, ['ClusterProvider/default', 'Namespace/team-a']);
  });

  it('rule 9: the first denied item decides the aggregate message', async () => {
    const r = reader({ providers: { default: { accessFrom: { selector: {} } } }, namespaces: { a: {} } });
    const s = await resolveWatchRuleSourceScope(r, rule('a', 'x', 'y'), target('a'));
    assert.match(s.message, /^spec\.rules\[0\] /);
  });

  it('rule 5: a failed provider read is an error, not a denial', async () => {
    await assert.rejects(
      resolveWatchRuleSourceScope(reader({ fail: 'provider' }), rule('a', '*'), target('a')),
      GateReadError,
    );
  });

  it('rule 10: the fingerprint is items in order as index=namespace joined by ";" (a second implementation)', async () => {
    const item = fc.constantFrom<string | undefined>(undefined, 'own', 'b', 'c', '*');
    await fc.assert(
      fc.asyncProperty(fc.array(item, { maxLength: 6 }), fc.boolean(), async (items, anyAllowed) => {
        const providers = { default: { accessFrom: { selector: {} }, allowAnySourceNamespace: anyAllowed } };
        const s = await resolveWatchRuleSourceScope(
          reader({ providers, namespaces: { own: {} } }),
          rule('own', ...items),
          target('own'),
        );
        const expected = items
          .map((it, i) => {
            if (it === undefined || it === 'own') return `${i}=own`;
            if (!anyAllowed || it === '*') return `${i}=`;
            return `${i}=${it}`;
          })
          .join(';');
        assert.equal(s.fingerprint(), expected);
        assert.equal(s.admitted(), anyAllowed || items.every((it) => it === undefined || it === 'own'));
      }),
      { numRuns: 300 },
    );
  });
});

describe('supersededFieldRefusal', () => {
  it('refuses a GitProvider storing push or commit.message, naming both replacements', () => {
    const d = supersededFieldRefusal('GitProvider', 'github', { push: {}, commit: { message: 'x' } });
    assert.equal(d?.allowed, false);
    assert.equal(d && !d.allowed ? d.reason : '', 'SupersededFieldStored');
    assert.match(
      d && !d.allowed ? d.message : '',
      /spec\.push .*window.* and spec\.commit\.message .*GitTarget's spec\.commit\.message/,
    );
  });

  it('refuses a GitTarget storing allowedSourceNamespaces, even an empty one', () => {
    assert.equal(supersededFieldRefusal('GitTarget', 't', { allowedSourceNamespaces: {} })?.allowed, false);
  });

  it('says nothing of objects storing no superseded field', () => {
    assert.equal(
      supersededFieldRefusal('GitProvider', 'g', { url: 'x', commit: { committer: {} } }),
      undefined,
    );
    assert.equal(
      supersededFieldRefusal('ClusterProvider', 'c', { allowSourceNamespaceOverride: false }),
      undefined,
    );
  });
});
