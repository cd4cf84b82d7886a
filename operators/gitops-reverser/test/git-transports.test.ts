/**
 * The same small push over each transport a GitProvider may use, with real git on both
 * ends: file://, smart HTTP (git's own git-http-backend behind Basic auth) and ssh
 * (Debian's OpenSSH sshd, installed on the fly when missing). Each failure mode an
 * operator sees — wrong token, unknown host key, refused key, nothing listening — is
 * produced by the real server and classified from real git's stderr; the secret never
 * appears in an error message nor in any command line (checked through PATH shims that
 * record the argv of every git and ssh started).
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { GitAuth } from '../src/git/credentials.ts';
import { type GitError, GitErrorKind, isGitError } from '../src/git/errors.ts';
import { Repository } from '../src/git/repository.ts';
import { BranchWriter, type CloseWindowResult } from '../src/git/writer.ts';
import { BOT, initBare, logOf, tipOf, treeOf } from './support/git-fixtures.ts';
import { basicAuthorization, type GitHttpServer, startGitHttpServer } from './support/git-http-server.ts';
import { generateKey, type Sshd, startSshd } from './support/sshd.ts';

/** Changes stay pending until closeWindow. */
const LONG_WINDOW = { windowMs: 600_000 };

/** Retries far apart: a failing test looks at the first attempt only. */
const SLOW_RETRY = { baseMs: 60_000, maxMs: 60_000, replayBaseMs: 5 };

const USER = 'mirror-bot';
const TOKEN = 'glpat-correct-token-0123456789';
const WRONG_TOKEN = 'glpat-wrong-token-9876543210';

interface Scratch {
  readonly root: string;
  /** A writer for `url` with its clone under `root`, closed when the test ends (before `root` is removed). */
  writer(url: string, auth: GitAuth, allowFile?: boolean): BranchWriter;
}

async function scratch(t: TestContext): Promise<Scratch> {
  const root = await mkdtemp(join(tmpdir(), 'gitops-reverser-transport-'));
  const writers: BranchWriter[] = [];
  t.after(async () => {
    for (const w of writers) await w.close();
    await rm(root, { recursive: true, force: true });
  });
  return {
    root,
    writer: (url, auth, allowFile = false) => {
      const writer = new BranchWriter({
        repository: new Repository({
          url,
          branch: 'main',
          dir: join(root, `clone-${writers.length}`),
          auth,
          allowedProtocols: allowFile ? ['file'] : undefined,
          networkTimeoutMs: 30_000,
        }),
        committer: BOT,
        retry: SLOW_RETRY,
      });
      writers.push(writer);
      return writer;
    },
  };
}

/** The push every transport test makes: one file, one commit. */
async function pushOneFile(writer: BranchWriter): Promise<CloseWindowResult> {
  writer.submit(
    'team-a/web',
    { path: 'team-a/web/deploy.yaml', content: 'replicas: 2\n', op: 'CREATE' },
    LONG_WINDOW,
  );
  return writer.closeWindow('team-a/web', { message: 'mirror team-a/web' });
}

async function assertPushed(bare: string, r: CloseWindowResult): Promise<void> {
  assert.equal(r.kind, 'committed', JSON.stringify(r, null, 2));
  assert.equal(await tipOf(bare), (r as { sha: string }).sha);
  assert.deepEqual(await treeOf(bare), new Map([['team-a/web/deploy.yaml', 'replicas: 2\n']]));
  const [commit] = await logOf(bare);
  assert.equal(commit?.message.trim(), 'mirror team-a/web');
}

function failure(r: CloseWindowResult): GitError {
  assert.equal(r.kind, 'failed', JSON.stringify(r));
  const error = (r as { error: unknown }).error;
  assert.ok(isGitError(error), String(error));
  return error;
}

/** Asserts that none of `secrets` occurs in the error's message, detail or string form. */
function assertNoSecret(error: GitError, secrets: readonly string[]): void {
  for (const text of [error.message, error.detail, String(error), JSON.stringify(error)]) {
    for (const secret of secrets) assert.ok(!text.includes(secret), `a secret leaked into: ${text}`);
  }
}

/**
 * Puts `git` and `ssh` shims first on PATH that append their argv to a log and exec the
 * real program; returns a reader of every argv recorded. PATH is restored when the test ends.
 */
async function recordArgv(t: TestContext, root: string): Promise<() => Promise<string>> {
  const bin = join(root, 'shim-bin');
  const log = join(root, 'argv.log');
  await mkdir(bin);
  await writeFile(log, '');
  for (const [name, real] of [
    ['git', '/usr/bin/git'],
    ['ssh', '/usr/bin/ssh'],
  ] as const) {
    const shim = join(bin, name);
    await writeFile(
      shim,
      `#!/bin/sh\nprintf '%s ' "$0" "$@" >> '${log}'\necho >> '${log}'\nexec ${real} "$@"\n`,
    );
    await chmod(shim, 0o755);
  }
  const saved = process.env.PATH;
  process.env.PATH = `${bin}:${saved ?? '/usr/bin:/bin'}`;
  t.after(() => {
    process.env.PATH = saved;
  });
  return () => readFile(log, 'utf8');
}

describe('real git over file://', () => {
  it('real git over file://: a small push lands on the bare repository', async (t) => {
    const s = await scratch(t);
    const bare = await initBare(join(s.root, 'remote.git'));
    await assertPushed(bare, await pushOneFile(s.writer(`file://${bare}`, { kind: 'none' }, true)));
  });

  it('real git over file://: a file URL is refused unless the file transport is allowed', async (t) => {
    const s = await scratch(t);
    const bare = await initBare(join(s.root, 'remote.git'));
    const error = failure(await pushOneFile(s.writer(`file://${bare}`, { kind: 'none' })));
    assert.equal(error.kind, GitErrorKind.InvalidConfig);
    assert.equal(await tipOf(bare), undefined);
  });
});

describe('real git over HTTP (git-http-backend behind Basic auth)', () => {
  let projectRoot: string;
  let server: GitHttpServer;
  before(async () => {
    projectRoot = await mkdtemp(join(tmpdir(), 'gitops-reverser-http-'));
    server = await startGitHttpServer({ projectRoot, username: USER, token: TOKEN });
  });
  after(async () => {
    await server.stop();
    await rm(projectRoot, { recursive: true, force: true });
  });

  it('real git over HTTP: the right token pushes, sent as a Basic header, never in a command line', async (t) => {
    const s = await scratch(t);
    const name = `ok-${Date.now()}.git`;
    const bare = await initBare(join(projectRoot, name));
    const argv = await recordArgv(t, s.root);
    const r = await pushOneFile(
      s.writer(server.url(name), { kind: 'basic', username: USER, password: TOKEN }),
    );
    await assertPushed(bare, r);
    const ours = server.requests.filter((q) => q.path.startsWith(`/${name}/`));
    assert.ok(
      ours.some((q) => q.path.endsWith('/git-receive-pack') && q.status === 200),
      'receive-pack answered 200',
    );
    assert.ok(ours.every((q) => q.authorization === basicAuthorization(USER, TOKEN)));
    const lines = await argv();
    assert.match(lines, /git .*push/, 'the shim saw the push');
    for (const secret of [TOKEN, Buffer.from(`${USER}:${TOKEN}`).toString('base64')]) {
      assert.ok(!lines.includes(secret), 'the token is in no argv');
    }
  });

  it('real git over HTTP: a wrong token is AuthFailed, names no token, and pushes nothing', async (t) => {
    const s = await scratch(t);
    const name = `wrong-${Date.now()}.git`;
    const bare = await initBare(join(projectRoot, name));
    const r = await pushOneFile(
      s.writer(server.url(name), { kind: 'basic', username: USER, password: WRONG_TOKEN }),
    );
    const error = failure(r);
    assert.equal(error.kind, GitErrorKind.AuthFailed, error.message);
    assert.match(error.message, /401/);
    assertNoSecret(error, [WRONG_TOKEN, TOKEN, Buffer.from(`${USER}:${WRONG_TOKEN}`).toString('base64')]);
    assert.equal(await tipOf(bare), undefined);
  });

  it('real git over HTTP: no credentials at all is AuthFailed, without a prompt', async (t) => {
    const s = await scratch(t);
    const name = `anon-${Date.now()}.git`;
    const bare = await initBare(join(projectRoot, name));
    const error = failure(await pushOneFile(s.writer(server.url(name), { kind: 'none' })));
    assert.equal(error.kind, GitErrorKind.AuthFailed, error.message);
    assert.equal(await tipOf(bare), undefined);
  });

  it('real git over HTTP: a repository the server does not have is RepositoryNotFound', async (t) => {
    const s = await scratch(t);
    const error = failure(
      await pushOneFile(
        s.writer(server.url('missing.git'), { kind: 'basic', username: USER, password: TOKEN }),
      ),
    );
    assert.equal(error.kind, GitErrorKind.RepositoryNotFound, error.message);
  });

  it('real git over HTTP: nothing listening is Unreachable', async (t) => {
    const s = await scratch(t);
    const closed = await startGitHttpServer({ projectRoot, username: USER, token: TOKEN });
    const url = closed.url('x.git');
    await closed.stop();
    const error = failure(
      await pushOneFile(s.writer(url, { kind: 'basic', username: USER, password: TOKEN })),
    );
    assert.equal(error.kind, GitErrorKind.Unreachable, error.message);
    assertNoSecret(error, [TOKEN]);
  });
});

describe('real git over SSH (OpenSSH sshd)', () => {
  let sshd: Sshd;
  let reposRoot: string;
  before(async () => {
    sshd = await startSshd();
    reposRoot = await mkdtemp(join(tmpdir(), 'gitops-reverser-ssh-repos-'));
  });
  after(async () => {
    await sshd?.stop();
    if (reposRoot) await rm(reposRoot, { recursive: true, force: true });
  });

  const sshAuth = (knownHosts: string, identity = sshd.clientKey.privateKey): GitAuth => ({
    kind: 'ssh',
    identity,
    knownHosts,
  });

  it('real git over SSH: the right key and known_hosts push, and the key is in no command line', async (t) => {
    const s = await scratch(t);
    const bare = await initBare(join(reposRoot, `ok-${Date.now()}.git`));
    const argv = await recordArgv(t, s.root);
    const r = await pushOneFile(s.writer(sshd.url(bare), sshAuth(sshd.knownHosts)));
    await assertPushed(bare, r).catch((err) => {
      throw new Error(`${err}\nsshd log:\n${sshd.log()}`);
    });
    const lines = await argv();
    assert.match(lines, /ssh .*StrictHostKeyChecking=yes/, 'ssh ran, with strict host key checking');
    const keyBody = sshd.clientKey.privateKey
      .split('\n')
      .filter((l) => l.length > 0 && !l.startsWith('-----'));
    for (const line of keyBody) assert.ok(!lines.includes(line), 'no line of the key is in any argv');
  });

  it('real git over SSH: a known_hosts with another key is HostKeyMismatch, and nothing is pushed', async (t) => {
    const s = await scratch(t);
    const bare = await initBare(join(reposRoot, `mismatch-${Date.now()}.git`));
    const error = failure(await pushOneFile(s.writer(sshd.url(bare), sshAuth(sshd.wrongKnownHosts))));
    assert.equal(error.kind, GitErrorKind.HostKeyMismatch, `${error.message}\n${error.detail}`);
    assert.match(error.message, /different from the one in known_hosts/);
    assertNoSecret(error, [sshd.clientKey.privateKey]);
    assert.equal(await tipOf(bare), undefined);
  });

  it('real git over SSH: a known_hosts without this server is HostKeyMismatch, never accepted on first use', async (t) => {
    const s = await scratch(t);
    const bare = await initBare(join(reposRoot, `unknown-${Date.now()}.git`));
    const otherServer = `[127.0.0.1]:${sshd.port + 1} ${sshd.knownHosts.split(' ').slice(1).join(' ')}`;
    const error = failure(await pushOneFile(s.writer(sshd.url(bare), sshAuth(otherServer))));
    assert.equal(error.kind, GitErrorKind.HostKeyMismatch, `${error.message}\n${error.detail}`);
    assert.match(error.message, /not in the given known_hosts/);
    assert.equal(await tipOf(bare), undefined);
  });

  it('real git over SSH: a key the server does not accept is AuthFailed, naming no key material', async (t) => {
    const s = await scratch(t);
    const bare = await initBare(join(reposRoot, `badkey-${Date.now()}.git`));
    const stranger = await generateKey(s.root, 'stranger');
    const error = failure(
      await pushOneFile(s.writer(sshd.url(bare), sshAuth(sshd.knownHosts, stranger.privateKey))),
    );
    assert.equal(error.kind, GitErrorKind.AuthFailed, `${error.message}\n${error.detail}`);
    assert.match(error.message, /Permission denied/);
    assertNoSecret(error, [stranger.privateKey]);
    assert.equal(await tipOf(bare), undefined);
  });

  it('real git over SSH: nothing listening is Unreachable', async (t) => {
    const s = await scratch(t);
    const closed = await startGitHttpServer({ projectRoot: s.root, username: USER, token: TOKEN });
    const port = closed.port;
    await closed.stop();
    const url = `ssh://${sshd.user}@127.0.0.1:${port}/nowhere.git`;
    const known = `[127.0.0.1]:${port} ${sshd.knownHosts.split(' ').slice(1).join(' ')}`;
    const error = failure(await pushOneFile(s.writer(url, sshAuth(known))));
    assert.equal(error.kind, GitErrorKind.Unreachable, `${error.message}\n${error.detail}`);
  });
});
