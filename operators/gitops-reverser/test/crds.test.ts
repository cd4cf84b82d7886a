/**
 * The six configbutler.ai CRDs: the committed YAML is exactly what the TypeScript
 * definitions generate, and the real apiserver refuses bad specs at admission with
 * messages that name the field and the fix, fills in the defaults, accepts the status
 * the types describe, refuses changes to the immutable fields, refuses writing the
 * superseded fields, and still serves (and takes the status of) an object an older
 * version stored with one.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { eventually, privateTestEnv, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeObject, type Patch } from '@operators/kit';
import fc from 'fast-check';
import {
  CLUSTER_PROVIDER,
  type ClusterProvider,
  type ClusterProviderStatus,
} from '../src/api/cluster-provider.ts';
import {
  CLUSTER_WATCH_RULE,
  type ClusterWatchRule,
  type ClusterWatchRuleStatus,
} from '../src/api/cluster-watch-rule.ts';
import { COMMIT_REQUEST, type CommitRequest, type CommitRequestStatus } from '../src/api/commit-request.ts';
import { CRD_FILES, generated, gitopsReverserCrds } from '../src/api/gen-crds.ts';
import { GIT_PROVIDER, type GitProvider, type GitProviderStatus } from '../src/api/git-provider.ts';
import { GIT_TARGET, type GitTarget, type GitTargetStatus } from '../src/api/git-target.ts';
import { WATCH_RULE, type WatchRule, type WatchRuleStatus } from '../src/api/watch-rule.ts';

type Gvk = { readonly apiVersion: string; readonly kind: string };
type Spec = Record<string, unknown>;
/** What was tried, the spec, and the message the apiserver must answer with. */
type BadCase = readonly [string, Spec, RegExp];

/** A Ready condition, as a reconciler writes it. */
const READY = {
  type: 'Ready',
  status: 'True',
  observedGeneration: 1,
  lastTransitionTime: '2026-01-01T00:00:00Z',
  reason: 'Reconciled',
  message: '',
} as const;

/** A unique prefix for this run's cluster-scoped objects: the shared plane outlives the file. */
const RUN = `crds-${process.pid}-${Math.random().toString(36).slice(2, 6)}`;

/** A 64-character DNS label: one more than a namespace name may have. */
const LABEL_64 = 'a'.repeat(64);

/** An age recipient as `age-keygen` printed it. */
const AGE_RECIPIENT = 'age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p';

describe('the committed CRDs', () => {
  it('are what gen-crds generates from src/api (run `npm run gen-crds -w @operators/gitops-reverser` after a change)', () => {
    for (const { path, text } of generated()) {
      assert.equal(readFileSync(path, 'utf8'), text, `${path} is stale`);
    }
  });

  it('are in group configbutler.ai v1alpha3 and category gitops-reverser, with status, Ready and Age columns', () => {
    const expected = [
      { plural: 'clusterproviders', scope: 'Cluster', shortNames: ['cp'] },
      { plural: 'gitproviders', scope: 'Namespaced', shortNames: undefined },
      { plural: 'gittargets', scope: 'Namespaced', shortNames: ['gt'] },
      { plural: 'watchrules', scope: 'Namespaced', shortNames: ['wr'] },
      { plural: 'clusterwatchrules', scope: 'Cluster', shortNames: ['cwr'] },
      { plural: 'commitrequests', scope: 'Namespaced', shortNames: undefined },
    ];
    assert.equal(CRD_FILES.length, expected.length);
    for (const [i, crd] of gitopsReverserCrds().entries()) {
      const want = expected[i];
      assert.ok(want);
      const spec = crd.spec as {
        scope: string;
        group: string;
        names: { plural: string; shortNames?: string[]; categories: string[] };
        versions: {
          name: string;
          subresources?: { status?: object };
          additionalPrinterColumns: { name: string }[];
        }[];
      };
      assert.equal(crd.metadata.name, `${want.plural}.configbutler.ai`);
      assert.equal(CRD_FILES[i]?.file, `crds/${want.plural}.yaml`);
      assert.equal(spec.scope, want.scope);
      assert.equal(spec.group, 'configbutler.ai');
      assert.deepEqual(spec.names.shortNames, want.shortNames);
      assert.deepEqual(spec.names.categories, ['gitops-reverser']);
      assert.equal(spec.versions.length, 1);
      assert.equal(spec.versions[0]?.name, 'v1alpha3');
      assert.deepEqual(spec.versions[0]?.subresources, { status: {} });
      const columns = spec.versions[0]?.additionalPrinterColumns.map((c) => c.name) ?? [];
      assert.equal(columns[0], 'Ready');
      assert.equal(columns.at(-1), 'Age');
    }
  });
});

// ---------------------------------------------------------------------------------------
// Helpers shared by the shared-plane and private-plane suites

const object = (
  gvk: Gvk,
  namespace: string | undefined,
  name: string,
  spec: Spec | undefined,
): KubeObject => ({
  ...gvk,
  metadata: namespace === undefined ? { name } : { name, namespace },
  ...(spec === undefined ? {} : { spec }),
});

/** A merge patch of `spec`, its error (or undefined when it passed). */
function patchSpec(
  env: TestEnv,
  gvk: Gvk,
  namespace: string | undefined,
  name: string,
  spec: Spec,
): Promise<unknown> {
  const patch: Patch = { type: 'merge', body: { spec } };
  return env.admin.patch(gvk, name, namespace, patch).then(
    () => undefined,
    (e: unknown) => e,
  );
}

function assertInvalid(err: unknown, message: RegExp, what: string): void {
  assert.ok(isApiError(err, ApiErrorReason.Invalid), `${what}: expected Invalid, got ${String(err)}`);
  assert.match(err.message, message, what);
}

describe('admission of the gitops-reverser kinds', () => {
  let env: TestEnv;
  const clusterScoped: { gvk: Gvk; name: string }[] = [];
  before(async () => {
    env = await testEnv();
    await env.installCrds(gitopsReverserCrds());
  });
  after(async () => {
    await Promise.all(
      clusterScoped.map(({ gvk, name }) => env.admin.delete(gvk, name).catch(() => undefined)),
    );
  });

  /** Every case is refused as Invalid, with its message; all at once, as dry runs. */
  async function refusesAll(
    gvk: Gvk,
    namespace: string | undefined,
    cases: readonly BadCase[],
  ): Promise<void> {
    await Promise.all(
      cases.map(async ([what, spec, message], i) => {
        const err = await env.admin
          .create(object(gvk, namespace, `${RUN}-bad-${i}`, spec), { dryRun: true })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        assertInvalid(err, message, what);
      }),
    );
  }

  /** Every spec is accepted (dry runs, all at once). */
  async function acceptsAll(gvk: Gvk, namespace: string | undefined, specs: readonly Spec[]): Promise<void> {
    await Promise.all(
      specs.map((spec, i) =>
        env.admin
          .create(object(gvk, namespace, `${RUN}-good-${i}`, spec), { dryRun: true })
          .catch((e: unknown) => {
            throw new Error(`${JSON.stringify(spec)} was refused: ${String(e)}`);
          }),
      ),
    );
  }

  /** Creates a cluster-scoped object with a name unique to this run, removed after the suite. */
  async function createClusterScoped<T extends KubeObject>(gvk: Gvk, suffix: string, spec: Spec): Promise<T> {
    const name = `${RUN}-${suffix}`;
    clusterScoped.push({ gvk, name });
    return (await env.admin.create(object(gvk, undefined, name, spec))) as T;
  }

  async function refusedUpdate(
    gvk: Gvk,
    namespace: string | undefined,
    name: string,
    spec: Spec,
    message: RegExp,
    what: string,
  ): Promise<void> {
    assertInvalid(await patchSpec(env, gvk, namespace, name, spec), message, what);
  }

  async function acceptedUpdate(
    gvk: Gvk,
    namespace: string | undefined,
    name: string,
    spec: Spec,
  ): Promise<void> {
    const err = await patchSpec(env, gvk, namespace, name, spec);
    assert.equal(err, undefined, `update ${JSON.stringify(spec)} was refused: ${String(err)}`);
  }

  const ns = (t: TestContext) => env.namespace(t, 'gr-crds');

  // -------------------------------------------------------------------------------------
  describe('ClusterProvider', () => {
    const kubeConfig = { secretRef: { name: 'prod-kubeconfig' } };
    const immutable =
      /spec\.kubeConfig: Invalid value: .*spec\.kubeConfig is immutable: it cannot be added, removed or changed; delete and recreate the ClusterProvider/;

    it('refuses the superseded fields, naming their replacements, and each bad spec', async () => {
      const allowedNamespaces =
        /spec\.allowedNamespaces: Forbidden: spec\.allowedNamespaces is superseded and can no longer be written: list the namespaces in spec\.accessFrom\.names or match them with spec\.accessFrom\.selector, and remove spec\.allowedNamespaces/;
      const override =
        /spec\.allowSourceNamespaceOverride: Forbidden: spec\.allowSourceNamespaceOverride is superseded and can no longer be written: set spec\.allowAnySourceNamespace instead/;
      await refusesAll(CLUSTER_PROVIDER, undefined, [
        ['allowedNamespaces', { allowedNamespaces: ['team-a'] }, allowedNamespaces],
        ['empty allowedNamespaces', { allowedNamespaces: [] }, allowedNamespaces],
        [
          'allowedNamespaces beside accessFrom',
          { accessFrom: { names: ['team-a'] }, allowedNamespaces: ['team-a'] },
          allowedNamespaces,
        ],
        ['allowSourceNamespaceOverride true', { allowSourceNamespaceOverride: true }, override],
        [
          'allowSourceNamespaceOverride false (the old default)',
          { allowSourceNamespaceOverride: false },
          override,
        ],
        [
          'a namespace name with capitals',
          { accessFrom: { names: ['Team-A'] } },
          /spec\.accessFrom\.names must be a namespace name/,
        ],
        [
          'a 64-character namespace name',
          { accessFrom: { names: [LABEL_64] } },
          /spec\.accessFrom\.names\[0\]: Too long/,
        ],
        [
          'a namespace twice',
          { accessFrom: { names: ['a', 'a'] } },
          /spec\.accessFrom\.names\[1\]: Duplicate value/,
        ],
        [
          'In without values',
          { accessFrom: { selector: { matchExpressions: [{ key: 'team', operator: 'In' }] } } },
          /spec\.accessFrom\.selector\.matchExpressions: In and NotIn need values/,
        ],
        [
          'a bad label key',
          { accessFrom: { selector: { matchLabels: { 'a b': 'x' } } } },
          /spec\.accessFrom\.selector\.matchLabels keys must be label keys/,
        ],
        ['qps 0', { qps: 0 }, /spec\.qps: Invalid value: 0: spec\.qps in body should be greater than 0/],
        [
          'burst 0',
          { burst: 0 },
          /spec\.burst: Invalid value: 0: spec\.burst in body should be greater than or equal to 1/,
        ],
        ['kubeConfig without secretRef', { kubeConfig: {} }, /spec\.kubeConfig\.secretRef: Required value/],
        [
          'a bad Secret name',
          { kubeConfig: { secretRef: { name: 'Prod_Kubeconfig' } } },
          /spec\.kubeConfig\.secretRef\.name must be an object name/,
        ],
        [
          'a bad Secret key',
          { kubeConfig: { secretRef: { name: 'prod', key: 'a key' } } },
          /spec\.kubeConfig\.secretRef\.key must be a Secret key/,
        ],
      ]);
    });

    it('accepts good specs, and an empty one means the own cluster, no namespace, no other source namespace', async () => {
      const none = await createClusterScoped<ClusterProvider>(CLUSTER_PROVIDER, 'no-spec', {});
      assert.deepEqual(none.spec, { allowAnySourceNamespace: false });
      const created = await env.admin.create(
        object(CLUSTER_PROVIDER, undefined, `${RUN}-absent`, undefined),
        {
          dryRun: true,
        },
      );
      assert.deepEqual(
        created.spec,
        { allowAnySourceNamespace: false },
        'no spec at all gets the defaults too',
      );
      await acceptsAll(CLUSTER_PROVIDER, undefined, [
        {
          kubeConfig: { secretRef: { name: 'prod-kubeconfig', key: 'value.yaml' } },
          accessFrom: {
            names: ['team-a', 'team-b'],
            selector: { matchExpressions: [{ key: 'example.com/tenant', operator: 'Exists' }] },
          },
          allowAnySourceNamespace: true,
          qps: 0.5,
          burst: 1,
        },
        { accessFrom: { selector: {} } },
        { accessFrom: {} },
        { qps: 50, burst: 100 },
      ]);
    });

    it('refuses adding, removing or changing kubeConfig, and takes other updates and its status', async () => {
      const local = `${RUN}-local`;
      const remote = `${RUN}-remote`;
      await createClusterScoped(CLUSTER_PROVIDER, 'local', {});
      await createClusterScoped(CLUSTER_PROVIDER, 'remote', { kubeConfig });
      await Promise.all([
        refusedUpdate(CLUSTER_PROVIDER, undefined, local, { kubeConfig }, immutable, 'adding'),
        refusedUpdate(CLUSTER_PROVIDER, undefined, remote, { kubeConfig: null }, immutable, 'removing'),
        refusedUpdate(
          CLUSTER_PROVIDER,
          undefined,
          remote,
          { kubeConfig: { secretRef: { name: 'other' } } },
          immutable,
          'another Secret',
        ),
        refusedUpdate(
          CLUSTER_PROVIDER,
          undefined,
          remote,
          { kubeConfig: { secretRef: { key: 'value' } } },
          immutable,
          'naming the (default) key',
        ),
      ]);
      await Promise.all([
        refusedUpdate(
          CLUSTER_PROVIDER,
          undefined,
          local,
          { allowedNamespaces: ['team-a'] },
          /spec\.allowedNamespaces: Forbidden: spec\.allowedNamespaces is superseded/,
          'adding allowedNamespaces',
        ),
        refusedUpdate(
          CLUSTER_PROVIDER,
          undefined,
          local,
          { allowSourceNamespaceOverride: false },
          /spec\.allowSourceNamespaceOverride: Forbidden: spec\.allowSourceNamespaceOverride is superseded/,
          'adding allowSourceNamespaceOverride',
        ),
      ]);
      await acceptedUpdate(CLUSTER_PROVIDER, undefined, remote, {
        accessFrom: { names: ['team-a'] },
        allowAnySourceNamespace: true,
        qps: 20,
      });
      await acceptedUpdate(CLUSTER_PROVIDER, undefined, remote, { kubeConfig });
      const status: ClusterProviderStatus = { conditions: [READY], observedGeneration: 2 };
      const written = await env.admin.patchStatus<ClusterProvider>(CLUSTER_PROVIDER, remote, undefined, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
      assert.deepEqual(written.spec.kubeConfig, kubeConfig);
    });
  });

  // -------------------------------------------------------------------------------------
  describe('GitProvider', () => {
    const ok = { url: 'https://github.com/example/fleet.git', allowedBranches: ['main'] };
    const knownHosts =
      /spec\.knownHostsRef: Required value: spec\.knownHostsRef is required for an ssh URL: host keys are always checked/;
    const url =
      /spec\.url must be an https:\/\/, http:\/\/, ssh:\/\/ or file:\/\/ URL, or scp-like user@host:path/;

    it('refuses the superseded fields, naming their replacements, and each bad spec', async (t) => {
      const namespace = await ns(t);
      await refusesAll(GIT_PROVIDER, namespace, [
        [
          'push',
          { ...ok, push: { interval: '1m', maxCommits: 20 } },
          /spec\.push: Forbidden: spec\.push is superseded and can no longer be written: batch commits with each GitTarget's spec\.commit\.window, and remove spec\.push/,
        ],
        ['empty push', { ...ok, push: {} }, /spec\.push is superseded/],
        [
          'commit.message',
          { ...ok, commit: { message: 'sync {{ .Name }}' } },
          /spec\.commit\.message: Forbidden: spec\.commit\.message is superseded and can no longer be written: set the message template in each GitTarget's spec\.commit\.message/,
        ],
        [
          'ssh:// without knownHostsRef',
          { ...ok, url: 'ssh://git@github.com/example/fleet.git' },
          knownHosts,
        ],
        ['scp-like without knownHostsRef', { ...ok, url: 'git@github.com:example/fleet.git' }, knownHosts],
        ['no url', { allowedBranches: ['main'] }, /spec\.url: Required value/],
        ['a bare host', { ...ok, url: 'github.com/example/fleet.git' }, url],
        ['ftp', { ...ok, url: 'ftp://example.com/fleet.git' }, url],
        ['a space', { ...ok, url: 'https://example.com/my fleet.git' }, url],
        [
          'a password in the url',
          { ...ok, url: 'https://bot:ghp_secret@github.com/example/fleet.git' },
          /spec\.url must not carry a password: put the credential in the Secret named by spec\.secretRef/,
        ],
        ['no allowedBranches', { url: ok.url }, /spec\.allowedBranches: Required value/],
        [
          'no allowed branch',
          { ...ok, allowedBranches: [] },
          /spec\.allowedBranches: Invalid value: 0: .*at least 1 items/,
        ],
        [
          'a branch glob with a space',
          { ...ok, allowedBranches: ['release *'] },
          /spec\.allowedBranches entries must be branch names or globs, without spaces/,
        ],
        [
          'a bad committer email',
          { ...ok, commit: { committer: { email: 'nobody' } } },
          /spec\.commit\.committer\.email must be an email address/,
        ],
        [
          'a committer name with <',
          { ...ok, commit: { committer: { name: 'bot <bot@example.com>' } } },
          /spec\.commit\.committer\.name must not contain < or >/,
        ],
        ['secretRef without a name', { ...ok, secretRef: {} }, /spec\.secretRef\.name: Required value/],
      ]);
    });

    it('accepts good specs and fills the defaults', async (t) => {
      const namespace = await ns(t);
      const created = await env.admin.create(object(GIT_PROVIDER, namespace, 'minimal', ok));
      assert.deepEqual(created.spec, {
        ...ok,
        commit: { committer: { name: 'gitops-reverser', email: 'noreply@gitops-reverser.invalid' } },
      });
      const ssh = await env.admin.create(
        object(GIT_PROVIDER, namespace, 'ssh', {
          url: 'git@github.com:example/fleet.git',
          secretRef: { name: 'fleet-deploy-key' },
          knownHostsRef: { name: 'github-known-hosts' },
          allowedBranches: ['main', 'release/*'],
          commit: { committer: { name: 'Fleet Bot' } },
        }),
      );
      const s = ssh.spec as GitProvider['spec'];
      assert.deepEqual(s.knownHostsRef, { name: 'github-known-hosts', key: 'known_hosts' });
      assert.deepEqual(s.commit?.committer, { name: 'Fleet Bot', email: 'noreply@gitops-reverser.invalid' });
      await acceptsAll(GIT_PROVIDER, namespace, [
        { ...ok, url: 'http://gitea.gitea.svc:3000/example/fleet.git', secretRef: { name: 'gitea-token' } },
        { ...ok, url: 'file:///srv/git/fleet.git' },
        {
          ...ok,
          url: 'ssh://git@gitea.example.com:2222/example/fleet.git',
          knownHostsRef: { name: 'hosts', key: 'hosts' },
        },
        { ...ok, url: 'https://bot@github.com/example/fleet.git' },
        { ...ok, allowedBranches: ['*'] },
        { ...ok, commit: { committer: { name: 'Bot', email: 'bot@example.com' } } },
        { ...ok, commit: {} },
        { ...ok, knownHostsRef: { name: 'hosts' } },
      ]);
    });

    it('takes updates and its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(GIT_PROVIDER, namespace, 'fleet', ok));
      await acceptedUpdate(GIT_PROVIDER, namespace, 'fleet', {
        url: 'https://gitlab.com/example/fleet.git',
        allowedBranches: ['main', 'staging'],
      });
      await refusedUpdate(
        GIT_PROVIDER,
        namespace,
        'fleet',
        { url: 'git@gitlab.com:example/fleet.git' },
        knownHosts,
        'switching to ssh without known hosts',
      );
      await Promise.all([
        refusedUpdate(
          GIT_PROVIDER,
          namespace,
          'fleet',
          { push: { interval: '1m' } },
          /spec\.push: Forbidden: spec\.push is superseded/,
          'adding push',
        ),
        refusedUpdate(
          GIT_PROVIDER,
          namespace,
          'fleet',
          { commit: { message: 'sync' } },
          /spec\.commit\.message: Forbidden: spec\.commit\.message is superseded/,
          'adding commit.message',
        ),
      ]);
      const status: GitProviderStatus = { conditions: [READY], observedGeneration: 2 };
      const written = await env.admin.patchStatus<GitProvider>(GIT_PROVIDER, 'fleet', namespace, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
    });
  });

  // -------------------------------------------------------------------------------------
  describe('GitTarget', () => {
    const ok = { providerRef: { name: 'fleet' }, branch: 'main', path: 'clusters/prod' };
    const at = (path: string): Spec => ({ ...ok, path });
    const window = (w: string): Spec => ({ ...ok, commit: { window: w } });
    const branch = (b: string): Spec => ({ ...ok, branch: b });
    const encryption = { provider: 'sops', age: { recipients: [AGE_RECIPIENT] } };

    it('refuses the superseded field, naming its replacement, and each bad spec', async (t) => {
      const namespace = await ns(t);
      const superseded =
        /spec\.allowedSourceNamespaces: Forbidden: spec\.allowedSourceNamespaces is superseded and can no longer be written: set spec\.allowAnySourceNamespace on the ClusterProvider and name the namespace in each WatchRule item's sourceNamespace/;
      const gitBranch = /spec\.branch must be a Git branch name/;
      await refusesAll(GIT_TARGET, namespace, [
        ['allowedSourceNamespaces', { ...ok, allowedSourceNamespaces: { names: ['a'] } }, superseded],
        ['empty allowedSourceNamespaces', { ...ok, allowedSourceNamespaces: {} }, superseded],
        [
          'allowedSourceNamespaces as a list',
          { ...ok, allowedSourceNamespaces: ['team-a'] },
          /spec\.allowedSourceNamespaces: Invalid value: "array": spec\.allowedSourceNamespaces in body must be of type object/,
        ],
        [
          'an absolute path',
          at('/abs'),
          /spec\.path must be relative to the repository root: remove the leading \//,
        ],
        [
          'a .. part',
          at('a/../b'),
          /spec\.path must not contain a \.\. part: it cannot leave the repository/,
        ],
        ['.. alone', at('..'), /spec\.path must not contain a \.\. part/],
        ['an empty path', at(''), /spec\.path must not be empty: write \. for the repository root/],
        [
          'an empty part',
          at('a//b'),
          /spec\.path must not have an empty part: remove the doubled or trailing \//,
        ],
        ['a trailing /', at('a/'), /spec\.path must not have an empty part/],
        ['a ./ part', at('./apps'), /spec\.path may be \. only as a whole/],
        ['into .git', at('.git/hooks'), /spec\.path must not enter \.git/],
        ['into .GIT', at('x/.GIT'), /spec\.path must not enter \.git/],
        ['a path of 513', at('a'.repeat(513)), /spec\.path: Too long/],
        ['no path', { providerRef: ok.providerRef, branch: 'main' }, /spec\.path: Required value/],
        ['a window of 25h', window('25h'), /spec\.commit\.window must be at most 24h/],
        ['a window of 24h1s', window('24h0m1s'), /spec\.commit\.window must be at most 24h/],
        [
          'a window of 5x',
          window('5x'),
          /spec\.commit\.window must be a Go duration such as 5s, 1m30s or 0s/,
        ],
        ['a window without unit', window('5'), /spec\.commit\.window must be a Go duration/],
        ['a negative window', window('-5s'), /spec\.commit\.window must be a Go duration/],
        ['a window of 7 digits', window('1000000ms'), /spec\.commit\.window must be a Go duration/],
        [
          'a message of 1025',
          { ...ok, commit: { message: 'x'.repeat(1025) } },
          /spec\.commit\.message: Too long/,
        ],
        [
          'an unknown prune mode',
          { ...ok, prune: { mode: 'Sometimes' } },
          /spec\.prune\.mode: Unsupported value/,
        ],
        ['a branch with a space', branch('my branch'), gitBranch],
        ['a branch glob', branch('release/*'), gitBranch],
        ['a branch with ..', branch('a..b'), gitBranch],
        ['a branch ending in .lock', branch('main.lock'), gitBranch],
        ['a branch starting with -', branch('-main'), gitBranch],
        ['a branch with a hidden part', branch('feature/.x'), gitBranch],
        ['a branch with a backslash', branch('a\\b'), gitBranch],
        ['no branch', { providerRef: ok.providerRef, path: '.' }, /spec\.branch: Required value/],
        ['no providerRef', { branch: 'main', path: '.' }, /spec\.providerRef: Required value/],
        [
          'a bad provider name',
          { ...ok, providerRef: { name: 'Fleet Repo' } },
          /spec\.providerRef\.name must be an object name/,
        ],
        [
          'an encryption provider other than sops',
          { ...ok, encryption: { ...encryption, provider: 'gpg' } },
          /spec\.encryption\.provider: Unsupported value: "gpg"/,
        ],
        [
          'encryption without age',
          { ...ok, encryption: { provider: 'sops' } },
          /spec\.encryption\.age: Required value/,
        ],
        [
          'no recipient',
          { ...ok, encryption: { ...encryption, age: { recipients: [] } } },
          /spec\.encryption\.age\.recipients: Invalid value: 0: .*at least 1 items/,
        ],
        [
          'a recipient that is not an age key',
          { ...ok, encryption: { ...encryption, age: { recipients: ['AGE-SECRET-KEY-1ABC'] } } },
          /spec\.encryption\.age\.recipients must be age public keys/,
        ],
      ]);
    });

    it('accepts good specs and fills the defaults', async (t) => {
      const namespace = await ns(t);
      const created = await env.admin.create(object(GIT_TARGET, namespace, 'minimal', at('.')));
      assert.deepEqual(created.spec, {
        providerRef: { name: 'fleet' },
        clusterProviderRef: { name: 'default' },
        branch: 'main',
        path: '.',
        commit: { window: '5s' },
        prune: { mode: 'OnEvent' },
      });
      await acceptsAll(GIT_TARGET, namespace, [
        ...['0s', '1m30s', '24h', '1500ms', '23h59m59s', '999999ms', '1h0m0s'].map(window),
        ...['a', 'apps/prod', 'a.b/c..d/.e', 'clusters/prod/.config', 'a'.repeat(512)].map(at),
        ...['release/1.2', 'feature/x-y_z', 'v1.0', 'a@b', 'renovate/npm-lodash-4.x'].map(branch),
        {
          ...ok,
          clusterProviderRef: { name: 'prod' },
          commit: { window: '1m', message: 'mirror: {{ .Count }} changes' },
          prune: { mode: 'Always' },
          encryption: { ...encryption, secretRef: { name: 'sops-age' } },
        },
        { ...ok, prune: { mode: 'Never' } },
      ]);
    });

    it('refuses changing providerRef, clusterProviderRef, branch or path, and takes other updates and its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(
        object(GIT_TARGET, namespace, 'prod', { ...ok, clusterProviderRef: { name: 'prod' } }),
      );
      const immutable = (field: string) =>
        new RegExp(`spec\\.${field} is immutable: delete and recreate the GitTarget`);
      await Promise.all([
        refusedUpdate(
          GIT_TARGET,
          namespace,
          'prod',
          { providerRef: { name: 'other' } },
          immutable('providerRef'),
          'providerRef',
        ),
        refusedUpdate(
          GIT_TARGET,
          namespace,
          'prod',
          { clusterProviderRef: { name: 'staging' } },
          immutable('clusterProviderRef'),
          'clusterProviderRef',
        ),
        refusedUpdate(
          GIT_TARGET,
          namespace,
          'prod',
          { clusterProviderRef: null },
          immutable('clusterProviderRef'),
          'dropping clusterProviderRef (back to the default)',
        ),
        refusedUpdate(GIT_TARGET, namespace, 'prod', { branch: 'staging' }, immutable('branch'), 'branch'),
        refusedUpdate(GIT_TARGET, namespace, 'prod', { path: 'clusters/staging' }, immutable('path'), 'path'),
      ]);
      await refusedUpdate(
        GIT_TARGET,
        namespace,
        'prod',
        { allowedSourceNamespaces: { names: ['team-a'] } },
        /spec\.allowedSourceNamespaces: Forbidden: spec\.allowedSourceNamespaces is superseded/,
        'adding allowedSourceNamespaces',
      );
      await acceptedUpdate(GIT_TARGET, namespace, 'prod', {
        commit: { window: '30s', message: 'x' },
        prune: { mode: 'Always' },
        encryption,
      });
      const status: GitTargetStatus = {
        conditions: [READY],
        observedGeneration: 2,
        lastCommit: { sha: '3f786850e387550fdab836ed7e6dc881de23001b', time: '2026-01-01T00:00:05Z' },
        retention: {
          inferredDeletes: 2,
          paths: ['clusters/prod/v1/configmaps/a.yaml', 'clusters/prod/v1/b.yaml'],
        },
        streams: 3,
      };
      const written = await env.admin.patchStatus<GitTarget>(GIT_TARGET, 'prod', namespace, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
      const err = await env.admin
        .patchStatus(GIT_TARGET, 'prod', namespace, {
          type: 'merge',
          body: {
            status: {
              retention: { inferredDeletes: 21, paths: Array.from({ length: 21 }, (_, i) => `${i}`) },
            },
          },
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assertInvalid(
        err,
        /status\.retention\.paths: Too many: 21: must have at most 20 items/,
        'retention paths',
      );
    });
  });

  // -------------------------------------------------------------------------------------
  describe('GitTarget branch and path, against independent judges', () => {
    /** Whether the apiserver admits a GitTarget with this branch and path (a dry run). */
    async function admits(namespace: string, branch: string, path: string): Promise<boolean> {
      const spec = { providerRef: { name: 'fleet' }, branch, path };
      return env.admin.create(object(GIT_TARGET, namespace, `${RUN}-prop`, spec), { dryRun: true }).then(
        () => true,
        (e: unknown) => {
          if (isApiError(e, ApiErrorReason.Invalid)) return false;
          throw e;
        },
      );
    }

    it('admits exactly the branches `git check-ref-format --branch` accepts, except @', async (t) => {
      const namespace = await ns(t);
      // Outside any repository, so that git judges the name alone.
      const cwd = mkdtempSync(join(tmpdir(), 'gr-branch-'));
      t.after(() => rmSync(cwd, { recursive: true, force: true }));
      const chars = [...'ab./-@{}~^:?*[\\ lockHEAD', '\x7f', '\t', 'ä'];
      const branchName = fc
        .array(fc.constantFrom(...chars), { minLength: 1, maxLength: 10 })
        .map((a) => a.join(''));
      const seed = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
      t.diagnostic(`FC_SEED=${seed}`);
      const names = fc.sample(branchName, { numRuns: 300, seed });
      // git judges every name in ONE shell (a git per name forked by bash, not by this
      // large process: forking node 300 times was most of this test's time).
      const judged = spawnSync(
        'bash',
        [
          '-c',
          'while IFS= read -r -d "" b; do git check-ref-format --branch "$b" >/dev/null 2>&1; echo $?; done',
        ],
        { cwd, input: names.map((b) => `${b}\0`).join(''), encoding: 'utf8' },
      );
      const codes = judged.stdout.trim().split('\n');
      assert.equal(codes.length, names.length, judged.stderr);
      // The apiserver's answers, a few at a time.
      for (let i = 0; i < names.length; i += 20) {
        await Promise.all(
          names.slice(i, i + 20).map(async (b, j) => {
            const gitAccepts = codes[i + j] === '0';
            assert.equal(await admits(namespace, b, '.'), gitAccepts && b !== '@', JSON.stringify(b));
          }),
        );
      }
    });

    it('admits exactly the paths a naive splitter finds inside the repository and outside .git', async (t) => {
      const namespace = await ns(t);
      const naive = (p: string): boolean => {
        if (p === '.') return true;
        const control = [...p].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
        if (p.length === 0 || p.length > 512 || control) return false;
        return p.split('/').every((s) => s !== '' && s !== '.' && s !== '..' && s.toLowerCase() !== '.git');
      };
      const path = fc
        .array(fc.constantFrom('a', '.', '/', '..', 'git', 'GIT', '.git', 'x y', '\n'), { maxLength: 8 })
        .map((a) => a.join(''));
      await fc.assert(
        fc.asyncProperty(path, async (p) => {
          assert.equal(await admits(namespace, 'main', p), naive(p), JSON.stringify(p));
        }),
        { numRuns: 300 },
      );
    });
  });

  // -------------------------------------------------------------------------------------
  describe('WatchRule', () => {
    const item = { apiGroups: [''], resources: ['configmaps'] };
    const ok = { targetRef: { name: 'prod' }, rules: [item] };
    const withItem = (extra: Spec): Spec => ({ ...ok, rules: [{ ...item, ...extra }] });
    const sourceNamespace =
      /spec\.rules\[0\]\.sourceNamespace: Invalid value: .*spec\.rules\[\]\.sourceNamespace must be a namespace name/;

    it('refuses each bad spec with a message that names the field and the fix', async (t) => {
      const namespace = await ns(t);
      await refusesAll(WATCH_RULE, namespace, [
        ['sourceNamespace Bad_NS', withItem({ sourceNamespace: 'Bad_NS' }), sourceNamespace],
        ['an empty sourceNamespace', withItem({ sourceNamespace: '' }), sourceNamespace],
        [
          'a 64-character sourceNamespace',
          withItem({ sourceNamespace: LABEL_64 }),
          /spec\.rules\[0\]\.sourceNamespace: Too long: may not be (longer|more) than 63/,
        ],
        [
          'a subresource',
          withItem({ resources: ['configmaps', 'pods/log'] }),
          /spec\.rules\[0\]\.resources\[1\]: Invalid value: .*must not name a subresource such as pods\/log: subresources are not mirrored; name the resource itself/,
        ],
        [
          'a capitalised resource',
          withItem({ resources: ['ConfigMaps'] }),
          /must be lowercase plural resource names/,
        ],
        [
          'no resource',
          withItem({ resources: [] }),
          /spec\.rules\[0\]\.resources: Invalid value: 0: .*at least 1 items/,
        ],
        [
          'no resources',
          { ...ok, rules: [{ apiGroups: [''] }] },
          /spec\.rules\[0\]\.resources: Required value/,
        ],
        [
          'no apiGroups',
          { ...ok, rules: [{ resources: ['pods'] }] },
          /spec\.rules\[0\]\.apiGroups: Required value/,
        ],
        [
          'a bad API group',
          withItem({ apiGroups: ['Apps'] }),
          /spec\.rules\[\]\.apiGroups must be API groups/,
        ],
        [
          'a bad API version',
          withItem({ apiVersions: ['V1'] }),
          /spec\.rules\[\]\.apiVersions must be API versions/,
        ],
        [
          'an unknown operation',
          withItem({ operations: ['PATCH'] }),
          /spec\.rules\[0\]\.operations\[0\]: Unsupported value: "PATCH"/,
        ],
        ['no rule', { ...ok, rules: [] }, /spec\.rules: Invalid value: 0: .*at least 1 items/],
        ['65 rules', { ...ok, rules: Array.from({ length: 65 }, () => item) }, /spec\.rules: Too many: 65/],
        ['no targetRef', { rules: [item] }, /spec\.targetRef: Required value/],
      ]);
    });

    it('accepts good specs and fills the defaults', async (t) => {
      const namespace = await ns(t);
      const created = await env.admin.create(object(WATCH_RULE, namespace, 'minimal', ok));
      assert.deepEqual(created.spec, {
        targetRef: { name: 'prod' },
        rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['*'], resources: ['configmaps'] }],
      });
      await acceptsAll(WATCH_RULE, namespace, [
        withItem({ sourceNamespace: '*' }),
        withItem({ sourceNamespace: 'a'.repeat(63) }),
        withItem({ sourceNamespace: 'team-a' }),
        withItem({ operations: ['CREATE', 'UPDATE'], apiVersions: ['v1'] }),
        {
          ...ok,
          rules: [
            {
              operations: ['*'],
              apiGroups: ['apps', 'networking.k8s.io'],
              resources: ['deployments', 'ingresses'],
            },
            { apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] },
          ],
        },
        { ...ok, rules: Array.from({ length: 64 }, () => item) },
      ]);
    });

    it('takes updates and its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(WATCH_RULE, namespace, 'rule', ok));
      await acceptedUpdate(WATCH_RULE, namespace, 'rule', {
        targetRef: { name: 'staging' },
        rules: [{ ...item, sourceNamespace: 'team-b' }],
      });
      const status: WatchRuleStatus = {
        conditions: [
          READY,
          { ...READY, type: 'SourceNamespaceAuthorized', reason: 'SourceNamespaceAllowed' },
        ],
        observedGeneration: 2,
        scopeFingerprint: 'sha256:5d41402abc4b2a76b9719d911017c592',
      };
      const written = await env.admin.patchStatus<WatchRule>(WATCH_RULE, 'rule', namespace, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
    });
  });

  // -------------------------------------------------------------------------------------
  describe('ClusterWatchRule', () => {
    const item = { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'] };
    const ok = { targetRef: { name: 'prod', namespace: 'fleet' }, rules: [item] };
    const withItem = (extra: Spec): Spec => ({ ...ok, rules: [{ ...item, ...extra }] });

    it('refuses each bad spec with a message that names the field and the fix', async () => {
      await refusesAll(CLUSTER_WATCH_RULE, undefined, [
        [
          'scope Namespaced',
          withItem({ scope: 'Namespaced' }),
          /spec\.rules\[0\]\.scope: Invalid value: .*spec\.rules\[\]\.scope may only be Cluster: a ClusterWatchRule mirrors cluster-scoped resources only; use a WatchRule for namespaced ones/,
        ],
        ['an empty scope', withItem({ scope: '' }), /spec\.rules\[\]\.scope may only be Cluster/],
        [
          'a subresource',
          withItem({ resources: ['nodes/status'] }),
          /spec\.rules\[0\]\.resources\[0\]: Invalid value: .*subresources are not mirrored/,
        ],
        [
          'targetRef without namespace',
          { ...ok, targetRef: { name: 'prod' } },
          /spec\.targetRef\.namespace: Required value/,
        ],
        [
          'a bad target namespace',
          { ...ok, targetRef: { name: 'prod', namespace: 'Fleet' } },
          /spec\.targetRef\.namespace must be a namespace name/,
        ],
        ['no rule', { ...ok, rules: [] }, /spec\.rules: Invalid value: 0: .*at least 1 items/],
      ]);
    });

    it('accepts good specs, fills the defaults and takes its status', async () => {
      const created = await createClusterScoped<ClusterWatchRule>(CLUSTER_WATCH_RULE, 'minimal', ok);
      assert.deepEqual(created.spec, {
        targetRef: { name: 'prod', namespace: 'fleet' },
        rules: [
          {
            operations: ['*'],
            apiGroups: ['rbac.authorization.k8s.io'],
            apiVersions: ['*'],
            resources: ['clusterroles'],
          },
        ],
      });
      await acceptsAll(CLUSTER_WATCH_RULE, undefined, [
        withItem({ scope: 'Cluster' }),
        { ...ok, rules: [{ apiGroups: [''], resources: ['namespaces'], operations: ['CREATE', 'DELETE'] }] },
      ]);
      const status: ClusterWatchRuleStatus = { conditions: [READY], observedGeneration: 1 };
      const written = await env.admin.patchStatus<ClusterWatchRule>(
        CLUSTER_WATCH_RULE,
        created.metadata.name ?? '',
        undefined,
        { type: 'merge', body: { status } },
      );
      assert.deepEqual(written.status, status);
    });
  });

  // -------------------------------------------------------------------------------------
  describe('CommitRequest', () => {
    const ok = { targetRef: { name: 'prod' } };
    const immutable =
      /spec is immutable: a CommitRequest asks for one commit; create a new CommitRequest instead/;

    it('refuses each bad spec with a message that names the field and the fix', async (t) => {
      const namespace = await ns(t);
      await refusesAll(COMMIT_REQUEST, namespace, [
        [
          'closeDelaySeconds 301',
          { ...ok, closeDelaySeconds: 301 },
          /spec\.closeDelaySeconds: Invalid value: 301: spec\.closeDelaySeconds in body should be less than or equal to 300/,
        ],
        ['negative closeDelaySeconds', { ...ok, closeDelaySeconds: -1 }, /spec\.closeDelaySeconds/],
        ['a message of 1025', { ...ok, message: 'x'.repeat(1025) }, /spec\.message: Too long/],
        ['no targetRef', {}, /spec\.targetRef: Required value/],
      ]);
    });

    it('accepts good specs and fills the defaults', async (t) => {
      const namespace = await ns(t);
      const created = await env.admin.create(object(COMMIT_REQUEST, namespace, 'now', ok));
      assert.deepEqual(created.spec, { targetRef: { name: 'prod' }, closeDelaySeconds: 0 });
      await acceptsAll(COMMIT_REQUEST, namespace, [
        { ...ok, closeDelaySeconds: 300, message: 'x'.repeat(1024) },
        { ...ok, message: 'release 1.2: mirror the rollout' },
      ]);
    });

    it('refuses any change of spec, and takes its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(COMMIT_REQUEST, namespace, 'once', { ...ok, message: 'release' }));
      await Promise.all([
        refusedUpdate(COMMIT_REQUEST, namespace, 'once', { message: 'other' }, immutable, 'message'),
        refusedUpdate(
          COMMIT_REQUEST,
          namespace,
          'once',
          { message: null },
          immutable,
          'dropping the message',
        ),
        refusedUpdate(
          COMMIT_REQUEST,
          namespace,
          'once',
          { closeDelaySeconds: 10 },
          immutable,
          'closeDelaySeconds',
        ),
        refusedUpdate(
          COMMIT_REQUEST,
          namespace,
          'once',
          { targetRef: { name: 'x' } },
          immutable,
          'targetRef',
        ),
      ]);
      const status: CommitRequestStatus = {
        conditions: [{ ...READY, reason: 'Committed' }],
        observedGeneration: 1,
        sha: '3f786850e387550fdab836ed7e6dc881de23001b',
        committedAt: '2026-01-01T00:00:05Z',
      };
      const written = await env.admin.patchStatus<CommitRequest>(COMMIT_REQUEST, 'once', namespace, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
    });
  });
});

// ---------------------------------------------------------------------------------------

/**
 * The CRDs without the rules that refuse writing the superseded fields (and the
 * deprecated scope): what an older version installed, under which such objects were
 * written.
 */
function olderCrds(): KubeObject[] {
  const refusals = /is superseded and can no longer be written|scope may only be Cluster/;
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(v)) {
      if (k === 'x-kubernetes-validations') {
        const kept = (child as { message?: string }[]).filter((r) => !refusals.test(r.message ?? ''));
        if (kept.length > 0) out[k] = kept;
      } else {
        out[k] = strip(child);
      }
    }
    return out;
  };
  const crds = gitopsReverserCrds().map((c) => strip(c) as KubeObject);
  assert.equal(JSON.stringify(crds).match(refusals), null, 'every refusal rule was stripped');
  return crds;
}

describe('an object an older version stored with a superseded field', () => {
  // A plane of its own: the CRDs are installed twice (without, then with the refusals),
  // which would change the rules under every other test file sharing the plane.
  let env: TestEnv & { plane: unknown };
  before(async () => {
    env = await privateTestEnv();
  });
  after(async () => {
    await env?.close();
  });

  it('is still served whole, takes status writes, and is refused a spec change until the field is removed', async (t) => {
    await env.installCrds(olderCrds());
    const namespace = await env.namespace(t, 'gr-legacy');
    const providerSpec = { allowedNamespaces: ['team-a'], allowSourceNamespaceOverride: false };
    const gitProviderSpec = {
      url: 'https://github.com/example/fleet.git',
      allowedBranches: ['main'],
      push: { interval: '1m', maxCommits: 20 },
      commit: { message: 'sync' },
    };
    const targetSpec = {
      providerRef: { name: 'fleet' },
      branch: 'main',
      path: '.',
      allowedSourceNamespaces: { names: ['team-a'], selector: { matchLabels: { mirror: 'true' } } },
    };
    const cwrSpec = {
      targetRef: { name: 'prod', namespace },
      rules: [{ apiGroups: [''], resources: ['namespaces'], scope: 'Namespaced' }],
    };
    await env.admin.create(object(CLUSTER_PROVIDER, undefined, 'legacy', providerSpec));
    await env.admin.create(object(GIT_PROVIDER, namespace, 'legacy', gitProviderSpec));
    await env.admin.create(object(GIT_TARGET, namespace, 'legacy', targetSpec));
    await env.admin.create(object(CLUSTER_WATCH_RULE, undefined, 'legacy', cwrSpec));

    await env.installCrds(gitopsReverserCrds());
    // The apiserver swaps the validation in a moment after the update: wait until a new
    // object with the field is refused.
    await eventually('the refusal rules to take effect', async () => {
      const err = await env.admin
        .create(object(CLUSTER_PROVIDER, undefined, 'probe', providerSpec), { dryRun: true })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      return isApiError(err, ApiErrorReason.Invalid) ? true : undefined;
    });

    const provider = await env.admin.get<ClusterProvider>(CLUSTER_PROVIDER, 'legacy');
    assert.deepEqual(provider.spec, { ...providerSpec, allowAnySourceNamespace: false });
    const gitProvider = await env.admin.get<GitProvider>(GIT_PROVIDER, 'legacy', namespace);
    assert.deepEqual(gitProvider.spec.push, gitProviderSpec.push);
    assert.equal(gitProvider.spec.commit?.message, 'sync');
    const target = await env.admin.get<GitTarget>(GIT_TARGET, 'legacy', namespace);
    assert.deepEqual(target.spec.allowedSourceNamespaces, targetSpec.allowedSourceNamespaces);
    const cwr = await env.admin.get<ClusterWatchRule>(CLUSTER_WATCH_RULE, 'legacy');
    assert.equal(cwr.spec.rules[0]?.scope, 'Namespaced');

    // The reconciler can report on every one of them, and add its finalizer.
    const refused = { ...READY, status: 'False', reason: 'SupersededFieldStored', message: 'remove it' };
    for (const [gvk, ns] of [
      [CLUSTER_PROVIDER, undefined],
      [GIT_PROVIDER, namespace],
      [GIT_TARGET, namespace],
      [CLUSTER_WATCH_RULE, undefined],
    ] as const) {
      const written = await env.admin.patchStatus(gvk, 'legacy', ns, {
        type: 'merge',
        body: { status: { conditions: [refused], observedGeneration: 1 } },
      });
      assert.deepEqual((written.status as { conditions: unknown[] }).conditions, [refused], gvk.kind);
      const labelled = await env.admin.patch(gvk, 'legacy', ns, {
        type: 'merge',
        body: { metadata: { finalizers: ['configbutler.ai/test'], labels: { migrated: 'no' } } },
      });
      assert.deepEqual(labelled.metadata.finalizers, ['configbutler.ai/test'], gvk.kind);
    }

    // A spec change that keeps the superseded field is refused, naming it...
    const keep = (gvk: Gvk, ns: string | undefined, spec: Spec) => patchSpec(env, gvk, ns, 'legacy', spec);
    assertInvalid(
      await keep(CLUSTER_PROVIDER, undefined, { accessFrom: { names: ['team-a'] } }),
      /spec\.allowedNamespaces is superseded.*spec\.allowSourceNamespaceOverride is superseded/s,
      'ClusterProvider',
    );
    assertInvalid(
      await keep(GIT_PROVIDER, namespace, { allowedBranches: ['main', 'staging'] }),
      /spec\.commit\.message is superseded.*spec\.push is superseded/s,
      'GitProvider',
    );
    assertInvalid(
      await keep(GIT_TARGET, namespace, { commit: { window: '10s' } }),
      /spec\.allowedSourceNamespaces is superseded/,
      'GitTarget',
    );
    // ...and accepted once it removes it.
    assert.equal(
      await keep(CLUSTER_PROVIDER, undefined, {
        accessFrom: { names: ['team-a'] },
        allowedNamespaces: null,
        allowSourceNamespaceOverride: null,
      }),
      undefined,
    );
    assert.equal(
      await keep(GIT_PROVIDER, namespace, {
        allowedBranches: ['main', 'staging'],
        push: null,
        commit: { message: null },
      }),
      undefined,
    );
    assert.equal(
      await keep(GIT_TARGET, namespace, { commit: { window: '10s' }, allowedSourceNamespaces: null }),
      undefined,
    );
    // A deprecated scope is judged where it is: the rest of the ClusterWatchRule can change.
    assert.equal(
      await keep(CLUSTER_WATCH_RULE, undefined, { targetRef: { name: 'staging', namespace } }),
      undefined,
    );
    const changed = await env.admin.get<ClusterWatchRule>(CLUSTER_WATCH_RULE, 'legacy');
    assert.equal(changed.spec.rules[0]?.scope, 'Namespaced');
  });
});
