/**
 * The writer side end to end, on the real apiserver and real git: two GitTargets on one
 * branch never corrupt each other; someone else's push is merged by replay, never
 * overwritten; a CommitRequest commits only its target's window and reports the remote
 * tip; the GitProvider's Secret drives HTTP basic auth (real git-http-backend) and SSH
 * (Debian's sshd on loopback, host key checked); Secrets reach Git only SOPS-encrypted
 * (checked with the real sops CLI), and never in plaintext in any blob.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { parse } from 'yaml';
import {
  git,
  initBare,
  isAncestor,
  logOf,
  pushAsSomeoneElse,
  tipOf,
  treeOf,
} from './support/git-fixtures.ts';
import { startGitHttpServer } from './support/git-http-server.ts';
import { condition, Harness, KINDS, naiveSanitize, repoDocs, until } from './support/harness.ts';
import { runSops, sopsBinary } from './support/sops-binary.ts';
import { startSshd } from './support/sshd.ts';

const h = Harness.forFile();
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;

const admitted = (t: { after: (fn: () => Promise<void>) => void }, prefix: string) =>
  h.admittedNamespace(t, prefix);

describe('writing to Git (real git, real apiserver)', () => {
  it('two GitTargets on one branch never corrupt each other', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-two');
    const repo = await h.bareRepo('two');
    await h.mirrorConfigMaps(ns, {
      clusterProvider: cp,
      url: repo.url,
      target: 'a',
      path: 'team-a',
      window: '1s',
    });
    await h.create(KINDS.gitTarget, ns, 'b', {
      providerRef: { name: 'a-repo' },
      clusterProviderRef: { name: cp },
      branch: 'main',
      path: 'team-b',
      commit: { window: '0s' },
    });
    await h.create(KINDS.watchRule, ns, 'b-configmaps', {
      targetRef: { name: 'b' },
      rules: [{ apiGroups: [''], resources: ['configmaps'] }],
    });
    for (let i = 0; i < 20; i++)
      await h.admin.create({ ...CM, metadata: { name: `cm-${i}`, namespace: ns }, data: { i: `${i}` } });
    const list = await h.admin.list<KubeObject>(CM, { namespace: ns });
    const want = new Map<string, unknown>();
    for (const p of ['team-a', 'team-b']) {
      for (const o of list.items)
        want.set(`${p}/${ns}/configmaps/${o.metadata.name}.yaml`, naiveSanitize({ ...CM, ...o }));
    }
    await until(
      'both targets hold every ConfigMap',
      async () => {
        const got = await repoDocs(repo.path, '');
        try {
          assert.deepEqual(got, want);
          return true;
        } catch {
          return undefined;
        }
      },
      60_000,
    );
    for (const c of await logOf(repo.path)) {
      const prefixes = new Set(c.files.map((f) => f.split('/')[0]));
      assert.ok(prefixes.size <= 1, `commit ${c.sha} mixes targets: ${c.files.join(', ')}`);
    }
  });

  it("someone else's concurrent push is merged by replay, not overwritten, and a CommitRequest reports the remote tip", async (t) => {
    const { ns, cp } = await admitted(t, 'gr-replay');
    const repo = await h.bareRepo('replay');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url, window: '20s' });
    // A change is "handed to the writer" once it is pending in its window, not before: a
    // CommitRequest sooner finds nothing to push (NoWindowInGrace) and the branch is not there.
    const reachedWriter = (file: string) =>
      until(`${file} reached the writer`, async () => {
        await h.operator.mirror.idle(`${ns}/mirror`);
        const writer = h.operator.mirror.writers.all().find((w) => w.url === repo.url);
        return writer?.unpushed().some((u) => u.paths.some((p) => p.endsWith(`/${file}`))) ? true : undefined;
      });
    await h.admin.create({ ...CM, metadata: { name: 'first', namespace: ns } });
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Ready', 'True');
    await reachedWriter('first.yaml');
    // A window of 20 s: the operator's clone is behind once someone else pushes meanwhile.
    await h.create(KINDS.commitRequest, ns, 'seed', { targetRef: { name: 'mirror' } });
    await h.waitCondition(KINDS.commitRequest, ns, 'seed', 'Ready', 'True');
    assert.ok(await tipOf(repo.path), 'the seed request pushed the branch');
    const scratch = await mkdtemp(join(tmpdir(), 'gr-other-'));
    const theirs = await pushAsSomeoneElse(
      scratch,
      repo.url,
      { 'README.md': 'hand-written\n' },
      'docs: a readme',
    );
    await h.admin.create({ ...CM, metadata: { name: 'second', namespace: ns } });
    // The change handed to the writer (pending in its 20 s window) before the request.
    await reachedWriter('second.yaml');
    await h.create(KINDS.commitRequest, ns, 'now', {
      targetRef: { name: 'mirror' },
      message: 'release: second',
    });
    const done = await h.waitCondition(KINDS.commitRequest, ns, 'now', 'Ready', 'True');
    const tip = await tipOf(repo.path);
    assert.equal(done.status?.sha, tip, 'status.sha is the remote tip after the replayed push');
    const writer = h.operator.mirror.writers.all().find((w) => w.url === repo.url);
    assert.ok((writer?.counters().replays ?? 0) >= 1, 'the push was rejected once and replayed');
    assert.ok(await isAncestor(repo.path, theirs, tip ?? ''), "the other party's commit survives");
    const tree = await treeOf(repo.path);
    assert.equal(tree.get('README.md'), 'hand-written\n');
    assert.ok(tree.has(`live/${ns}/configmaps/second.yaml`));
    assert.equal((await logOf(repo.path))[0]?.message.trim(), 'release: second');
    const history = (await git(repo.path, 'reflog', 'show', '--format=%H', 'refs/heads/main'))
      .split('\n')
      .filter(Boolean)
      .reverse();
    for (let i = 1; i < history.length; i++) {
      assert.ok(
        await isAncestor(repo.path, history[i - 1] ?? '', history[i] ?? ''),
        'every update of the branch was a fast-forward',
      );
    }
  });

  it('a CommitRequest with nothing pending is Ready (NoWindowInGrace), one for a missing target waits (GitTargetNotFound)', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-cr');
    const repo = await h.bareRepo('cr');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url, window: '0s' });
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Ready', 'True');
    const tip = await tipOf(repo.path);
    await h.create(KINDS.commitRequest, ns, 'idle', { targetRef: { name: 'mirror' }, closeDelaySeconds: 1 });
    const idle = await h.waitCondition(KINDS.commitRequest, ns, 'idle', 'Ready', 'True', 'NoWindowInGrace');
    assert.equal(condition(idle, 'Pushed')?.status, 'False');
    assert.equal(await tipOf(repo.path), tip, 'nothing committed');
    await h.create(KINDS.commitRequest, ns, 'orphan', { targetRef: { name: 'no-such-target' } });
    const orphan = await h.waitCondition(
      KINDS.commitRequest,
      ns,
      'orphan',
      'Ready',
      'False',
      'GitTargetNotFound',
    );
    assert.equal(condition(orphan, 'Stalled')?.status, 'False', 'it waits for the target');
  });

  it('HTTP basic auth with the GitProvider Secret token over real git-http-backend; a wrong token is AuthFailed', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-http');
    const root = await mkdtemp(join(tmpdir(), 'gr-http-'));
    await initBare(join(root, 'repo.git'));
    const server = await startGitHttpServer({ projectRoot: root, username: 'mirror', token: 's3cr3t-t0ken' });
    t.after(() => server.stop());
    await h.admin.create({
      ...SECRET,
      metadata: { name: 'http-creds', namespace: ns },
      stringData: { username: 'mirror', token: 's3cr3t-t0ken' },
    });
    await h.admin.create({
      ...SECRET,
      metadata: { name: 'bad-creds', namespace: ns },
      stringData: { username: 'mirror', token: 'wrong' },
    });
    await h.create(KINDS.gitProvider, ns, 'http', {
      url: server.url('repo.git'),
      secretRef: { name: 'http-creds' },
      allowedBranches: ['main'],
    });
    await h.create(KINDS.gitProvider, ns, 'http-bad', {
      url: server.url('repo.git'),
      secretRef: { name: 'bad-creds' },
      allowedBranches: ['main'],
    });
    for (const [target, provider, path] of [
      ['good', 'http', 'good'],
      ['bad', 'http-bad', 'bad'],
    ] as const) {
      await h.create(KINDS.gitTarget, ns, target, {
        providerRef: { name: provider },
        clusterProviderRef: { name: cp },
        branch: 'main',
        path,
        commit: { window: '0s' },
      });
      await h.create(KINDS.watchRule, ns, target, {
        targetRef: { name: target },
        rules: [{ apiGroups: [''], resources: ['configmaps'] }],
      });
    }
    await h.admin.create({ ...CM, metadata: { name: 'over-http', namespace: ns } });
    await until('the ConfigMap pushed over HTTP', async () =>
      (await repoDocs(join(root, 'repo.git'), `good/${ns}/configmaps/over-http.yaml`)).size
        ? true
        : undefined,
    );
    const bad = await h.waitCondition(KINDS.gitTarget, ns, 'bad', 'Ready', 'False', 'AuthFailed');
    const message = bad.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
    assert.ok(!message.includes('wrong'), 'the token never appears in a condition');
    assert.equal(
      [...(await treeOf(join(root, 'repo.git'))).keys()].filter((p) => p.startsWith('bad/')).length,
      0,
    );
  });

  it('SSH with the GitProvider identity and knownHostsRef: the right host key pushes, another is refused', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-ssh');
    const sshd = await startSshd();
    t.after(() => sshd.stop());
    const bare = await initBare(await mkdtemp(join(tmpdir(), 'gr-ssh-repo-')));
    await h.admin.create({
      ...SECRET,
      metadata: { name: 'ssh-key', namespace: ns },
      stringData: { identity: sshd.clientKey.privateKey },
    });
    await h.admin.create({
      ...SECRET,
      metadata: { name: 'hosts', namespace: ns },
      stringData: { known_hosts: sshd.knownHosts },
    });
    await h.admin.create({
      ...SECRET,
      metadata: { name: 'wrong-hosts', namespace: ns },
      stringData: { known_hosts: sshd.wrongKnownHosts },
    });
    for (const [name, hosts] of [
      ['ssh', 'hosts'],
      ['ssh-wrong', 'wrong-hosts'],
    ] as const) {
      await h.create(KINDS.gitProvider, ns, name, {
        url: sshd.url(bare),
        secretRef: { name: 'ssh-key' },
        knownHostsRef: { name: hosts },
        allowedBranches: ['main'],
      });
      await h.create(KINDS.gitTarget, ns, name, {
        providerRef: { name },
        clusterProviderRef: { name: cp },
        branch: 'main',
        path: name,
        commit: { window: '0s' },
      });
      await h.create(KINDS.watchRule, ns, name, {
        targetRef: { name },
        rules: [{ apiGroups: [''], resources: ['configmaps'] }],
      });
    }
    await h.admin.create({ ...CM, metadata: { name: 'over-ssh', namespace: ns } });
    await until(
      'the ConfigMap pushed over SSH',
      async () => ((await repoDocs(bare, `ssh/${ns}/configmaps/over-ssh.yaml`)).size ? true : undefined),
      60_000,
    );
    await h.waitCondition(KINDS.gitTarget, ns, 'ssh-wrong', 'Ready', 'False', 'AuthFailed');
    assert.equal([...(await treeOf(bare)).keys()].filter((p) => p.startsWith('ssh-wrong/')).length, 0);
  });

  it('a Secret is written only SOPS-encrypted: real sops decrypts it with the age identity; no blob holds the plaintext', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-sops');
    const repo = await h.bareRepo('sops');
    const identity = await generateX25519Identity();
    const recipient = await identityToRecipient(identity);
    await h.admin.create({ ...SECRET, metadata: { name: 'age', namespace: ns }, stringData: { identity } });
    await h.create(KINDS.gitProvider, ns, 'repo', { url: repo.url, allowedBranches: ['main'] });
    await h.create(KINDS.gitTarget, ns, 'enc', {
      providerRef: { name: 'repo' },
      clusterProviderRef: { name: cp },
      branch: 'main',
      path: 'enc',
      commit: { window: '0s' },
      encryption: { provider: 'sops', age: { recipients: [recipient] }, secretRef: { name: 'age' } },
    });
    await h.create(KINDS.gitTarget, ns, 'plain', {
      providerRef: { name: 'repo' },
      clusterProviderRef: { name: cp },
      branch: 'main',
      path: 'plain',
      commit: { window: '0s' },
    });
    for (const target of ['enc', 'plain']) {
      await h.create(KINDS.watchRule, ns, target, {
        targetRef: { name: target },
        rules: [{ apiGroups: [''], resources: ['secrets'] }],
      });
    }
    const plaintext = 'correct-horse-battery-staple-0451';
    await h.admin.create({
      ...SECRET,
      metadata: { name: 'db', namespace: ns },
      stringData: { password: plaintext },
    });
    const path = `enc/${ns}/secrets/db.sops.yaml`;
    await until('the encrypted Secret in Git', async () =>
      (await treeOf(repo.path)).has(path) ? true : undefined,
    );
    const plain = await h.waitCondition(
      KINDS.gitTarget,
      ns,
      'plain',
      'StreamsRunning',
      'False',
      'EncryptionRequired',
    );
    assert.match(
      plain.status?.conditions?.find((c) => c.type === 'StreamsRunning')?.message ?? '',
      /never written in plaintext/,
    );

    const sops = await sopsBinary();
    const out = await runSops(sops, ['--decrypt', 'db.sops.yaml'], {
      ageKey: identity,
      files: { 'db.sops.yaml': (await treeOf(repo.path)).get(path) ?? '' },
    });
    assert.equal(out.code, 0, out.stderr);
    const decrypted = parse(out.stdout) as { data?: Record<string, string> };
    assert.equal(Buffer.from(decrypted.data?.password ?? '', 'base64').toString(), plaintext);
    // Every blob the repository holds, in every commit.
    const blobs = (await git(repo.path, 'rev-list', '--objects', '--all'))
      .split('\n')
      .map((l) => l.split(' ')[0])
      .filter(Boolean);
    for (const sha of blobs) {
      const type = (await git(repo.path, 'cat-file', '-t', sha ?? '')).trim();
      if (type !== 'blob') continue;
      const content = await git(repo.path, 'cat-file', '-p', sha ?? '');
      assert.ok(!content.includes(plaintext), `blob ${sha} holds the plaintext`);
      assert.ok(
        !content.includes(Buffer.from(plaintext).toString('base64')),
        `blob ${sha} holds the base64 plaintext`,
      );
    }
  });
});
