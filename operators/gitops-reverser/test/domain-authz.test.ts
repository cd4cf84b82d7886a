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
  clusterWatchRuleGate,
  GateReadError,
  type GitTargetRef,
  gitTargetAdmitted,
  resolveWatchRuleSourceScope,
  supersededFieldRefusal,
  type WatchRuleItems,
  watchRuleTargetGate,
} from '../src/domain/authz/index.ts';

type Spec = NonNullable<ClusterProviderPolicy['spec']>;

/**
 * Upstream's messages, transcribed from the Go format strings of ConfigButler/gitops-reverser
 * `internal/authz` (clusterprovider_admission.go, source_namespace.go, superseded_fields.go)
 * and `internal/watch` (the ClusterWatchRule compile path). A second, literal spelling: never
 * our own message builders.
 */
const UPSTREAM = {
  providerNotFound: (p: string) =>
    `referenced ClusterProvider "${p}" was not found; a GitTarget may mirror a source cluster only through an existing ClusterProvider. The operator never creates one: declare it yourself, or let the chart render "default" via clusterProvider.createDefault`,
  clusterProviderRenamed: (p: string, field: string, replacement: string) =>
    `ClusterProvider "${p}" still sets ${field}, renamed to ${replacement} in this release. Same shape, same default, same semantics: rename the key. It is refused rather than ignored because ignoring it would revoke what it grants without saying so`,
  gitProviderMoved: (ns: string, name: string, field: string, replacement: string) =>
    `GitProvider ${ns}/${name} still sets ${field}, which moved to ${replacement} in this release. Writes through this provider are STOPPED rather than made at the default cadence and wording, because a folder committing on settings nobody chose is worse than one that is not committing. Set the values on each GitTarget that needs them, then remove them here`,
  gitTargetRemoved: (ns: string, name: string) =>
    `GitTarget ${ns}/${name} still sets spec.allowedSourceNamespaces, which this release removed. It is refused rather than ignored, because ignoring it would leave a field that reads like a bound on which source namespaces reach this folder while enforcing nothing. Source-cluster RBAC now bounds what may be read and ClusterProvider.spec.accessFrom bounds which namespaces may wield it; a rules[].sourceNamespace other than a WatchRule's own namespace needs only ClusterProvider.spec.allowAnySourceNamespace. Note that "*" no longer means "every namespace this GitTarget admits": it is every namespace the credential can read. Delete spec.allowedSourceNamespaces to clear this`,
  delegatesNothing: (p: string) =>
    `referenced ClusterProvider "${p}" was not found, so it delegates nothing; a WatchRule may watch a namespace other than its own only through an existing provider that sets spec.allowAnySourceNamespace`,
  notAtAll: (ns: string, name: string, p: string, why: string) =>
    `GitTarget ${ns}/${name} may not mirror through ClusterProvider "${p}" at all: ${why}`,
  noDelegation: (p: string, own: string) =>
    `ClusterProvider "${p}" does not set spec.allowAnySourceNamespace; a WatchRule may watch only its own namespace "${own}" until a platform admin delegates that choice`,
} as const;

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
    /** The whole message, exactly (upstream's wording). */
    message?: string;
    reads: string[];
  };
  const cases: Case[] = [
    {
      name: 'rule 1: an omitted ref means "default", and a missing default is ClusterProviderNotFound before any policy read',
      namespaces: { a: {} },
      target: target('a'),
      allowed: false,
      reason: 'ClusterProviderNotFound',
      message: UPSTREAM.providerNotFound('default'),
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 1: a named provider that does not exist is ClusterProviderNotFound',
      providers: { default: { accessFrom: { selector: {} } } },
      target: target('a', 'remote'),
      allowed: false,
      reason: 'ClusterProviderNotFound',
      message: UPSTREAM.providerNotFound('remote'),
      reads: ['ClusterProvider/remote'],
    },
    {
      name: 'rule 2: a provider storing allowedNamespaces is SupersededFieldStored before the Namespace read',
      providers: { default: { accessFrom: { selector: {} }, allowedNamespaces: ['a'] } },
      target: target('a'),
      allowed: false,
      reason: 'SupersededFieldStored',
      message: UPSTREAM.clusterProviderRenamed('default', 'spec.allowedNamespaces', 'spec.accessFrom'),
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
      message: UPSTREAM.clusterProviderRenamed(
        'default',
        'spec.allowSourceNamespaceOverride',
        'spec.allowAnySourceNamespace',
      ),
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
      message: 'namespace "a" is not permitted to reference ClusterProvider "default" (spec.accessFrom)',
      reads: ['ClusterProvider/default'],
    },
    {
      name: 'rule 3: accessFrom: {} admits nothing',
      providers: { default: { accessFrom: {} } },
      target: target('a'),
      allowed: false,
      reason: 'NamespaceNotAuthorized',
      message: 'namespace "a" is not permitted to reference ClusterProvider "default" (spec.accessFrom)',
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
      message: 'namespace "a" is not permitted to reference ClusterProvider "default" (spec.accessFrom)',
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
      message:
        'ClusterProvider "default" accessFrom selector is invalid: matchExpressions[0]: operator In needs at least one value',
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
        if (c.message !== undefined) assert.equal(d.message, c.message);
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
    assert.equal(
      s.message,
      'spec.rules[0] (resources configmaps, sourceNamespace "team-a" (omitted; the WatchRule\'s own namespace)) watches this WatchRule\'s own namespace "team-a", which needs no authorization',
      "the first item's message, as upstream",
    );
  });

  it('rule 9: zero items is LegacySourceNamespace', async () => {
    const s = await resolveWatchRuleSourceScope(reader({}), rule('a'), target('a'));
    assert.equal(s.reason, 'LegacySourceNamespace');
    assert.equal(s.admitted(), true);
    assert.equal(s.fingerprint(), '');
    assert.equal(s.message, 'no rule items to authorize');
  });

  const denials: [string, Record<string, Spec> | undefined, string][] = [
    ['the provider does not exist', undefined, UPSTREAM.delegatesNothing('default')],
    [
      "the provider does not admit the target's namespace",
      { default: { accessFrom: { names: ['other'] }, allowAnySourceNamespace: true } },
      UPSTREAM.notAtAll(
        'team-a',
        't',
        'default',
        'namespace "team-a" is not permitted to reference ClusterProvider "default" (spec.accessFrom)',
      ),
    ],
    [
      'the provider does not set allowAnySourceNamespace',
      { default: { accessFrom: { selector: {} } } },
      UPSTREAM.noDelegation('default', 'team-a'),
    ],
    [
      'the provider stores a superseded field',
      { default: { ...open, allowSourceNamespaceOverride: true } },
      UPSTREAM.notAtAll(
        'team-a',
        't',
        'default',
        UPSTREAM.clusterProviderRenamed(
          'default',
          'spec.allowSourceNamespaceOverride',
          'spec.allowAnySourceNamespace',
        ),
      ),
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
        assert.equal(
          s.message,
          `spec.rules[1] (resources secrets,services, sourceNamespace "${sourceNamespace}"): ${message}`,
        );
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
    assert.equal(
      s.message,
      'all 3 rule item(s) are authorized; watching source namespace(s) every namespace (cluster-wide), team-a, team-b',
    );
    assert.deepEqual(
      s.items.map((i) => i.message),
      [
        'spec.rules[0] (resources configmaps, sourceNamespace "*"): ClusterProvider "default" sets spec.allowAnySourceNamespace, so this item watches every namespace its source credential can read, as one cluster-wide stream',
        'spec.rules[1] (resources secrets,services, sourceNamespace "team-b"): ClusterProvider "default" sets spec.allowAnySourceNamespace, so this item may watch source namespace "team-b"; whether it can is decided by that credential\'s RBAC',
        'spec.rules[2] (resources secrets,services, sourceNamespace "team-a" (omitted; the WatchRule\'s own namespace)) watches this WatchRule\'s own namespace "team-a", which needs no authorization',
      ],
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
    assert.equal(
      s.message,
      `spec.rules[0] (resources configmaps, sourceNamespace "x"): ${UPSTREAM.noDelegation('default', 'a')}`,
    );
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
    const d = supersededFieldRefusal(
      'GitProvider',
      { namespace: 'team-a', name: 'github' },
      { push: {}, commit: { message: 'x' } },
    );
    assert.equal(d?.allowed, false);
    assert.equal(d && !d.allowed ? d.reason : '', 'SupersededFieldStored');
    assert.equal(
      d && !d.allowed ? d.message : '',
      UPSTREAM.gitProviderMoved(
        'team-a',
        'github',
        'spec.push and spec.commit.message',
        'GitTarget.spec.commit.window and GitTarget.spec.commit.message',
      ),
    );
    const one = supersededFieldRefusal('GitProvider', { namespace: 'team-a', name: 'github' }, { push: {} });
    assert.equal(
      one && !one.allowed ? one.message : '',
      UPSTREAM.gitProviderMoved('team-a', 'github', 'spec.push', 'GitTarget.spec.commit.window'),
    );
  });

  it('refuses a GitTarget storing allowedSourceNamespaces, even an empty one', () => {
    const d = supersededFieldRefusal(
      'GitTarget',
      { namespace: 'team-a', name: 't' },
      { allowedSourceNamespaces: {} },
    );
    assert.equal(d && !d.allowed ? d.message : '', UPSTREAM.gitTargetRemoved('team-a', 't'));
  });

  it('refuses a ClusterProvider storing both renamed keys, naming both renames in one message', () => {
    const d = supersededFieldRefusal(
      'ClusterProvider',
      { name: 'default' },
      { allowedNamespaces: { names: ['a'] }, allowSourceNamespaceOverride: true },
    );
    assert.equal(
      d && !d.allowed ? d.message : '',
      UPSTREAM.clusterProviderRenamed(
        'default',
        'spec.allowedNamespaces and spec.allowSourceNamespaceOverride',
        'spec.accessFrom and spec.allowAnySourceNamespace',
      ),
    );
  });

  it('says nothing of objects storing no superseded field', () => {
    assert.equal(
      supersededFieldRefusal(
        'GitProvider',
        { namespace: 'n', name: 'g' },
        { url: 'x', commit: { committer: {} } },
      ),
      undefined,
    );
    assert.equal(
      supersededFieldRefusal('ClusterProvider', { name: 'c' }, { allowSourceNamespaceOverride: false }),
      undefined,
    );
  });
});

describe('what a rule may say about its GitTarget', () => {
  const superseded: GitTargetRef = {
    metadata: { namespace: 'team-a', name: 't' },
    spec: {
      clusterProviderRef: { name: 'gone' },
      allowedSourceNamespaces: { names: ['x'] },
    } as GitTargetRef['spec'],
  };
  const namespaced = { spec: { rules: [{ scope: 'Namespaced' }] } };

  it("a WatchRule: the target's superseded field first (no read), then its admission", async () => {
    const r = reader({});
    const d = await watchRuleTargetGate(r, superseded);
    assert.deepEqual(d, {
      allowed: false,
      reason: 'SupersededFieldStored',
      message: UPSTREAM.gitTargetRemoved('team-a', 't'),
    });
    assert.deepEqual(r.reads, []);
    const missing = await watchRuleTargetGate(r, target('team-a', 'gone'));
    assert.deepEqual(missing, {
      allowed: false,
      reason: 'ClusterProviderNotFound',
      message: UPSTREAM.providerNotFound('gone'),
    });
  });

  it("a ClusterWatchRule, in the seed's order: superseded, then admission, then its stored scope", async () => {
    assert.deepEqual(await clusterWatchRuleGate(reader({}), namespaced, superseded), {
      allowed: false,
      reason: 'SupersededFieldStored',
      message: UPSTREAM.gitTargetRemoved('team-a', 't'),
      target: { reason: 'SupersededFieldStored', message: UPSTREAM.gitTargetRemoved('team-a', 't') },
    });
    assert.deepEqual(await clusterWatchRuleGate(reader({}), namespaced, target('team-a', 'gone')), {
      allowed: false,
      reason: 'GitTargetNamespaceNotAuthorized',
      message: `ClusterWatchRule may not compile against GitTarget 'team-a/t': ${UPSTREAM.providerNotFound('gone')}`,
      target: { reason: 'ClusterProviderNotFound', message: UPSTREAM.providerNotFound('gone') },
    });
    const admitting = reader({ providers: { default: { accessFrom: { names: ['team-a'] } } } });
    assert.deepEqual(await clusterWatchRuleGate(admitting, namespaced, target('team-a')), {
      allowed: false,
      reason: 'ClusterScopeOnly',
      message:
        'ClusterWatchRule is cluster-scoped only; watch namespaced resources with a WatchRule and `rules[].sourceNamespace`.',
    });
    assert.deepEqual(
      await clusterWatchRuleGate(
        admitting,
        { spec: { rules: [{ scope: 'Cluster' }, {}] } },
        target('team-a'),
      ),
      { allowed: true },
    );
  });
});
