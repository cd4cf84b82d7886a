/**
 * The environment of a git invocation: credentials travel in the environment or in
 * private files (never argv), the host's git and ssh configuration stays out, and host
 * keys are always checked. Real git and real ssh (`ssh -G`, which prints the options it
 * would use without connecting) are the judges where a string comparison would not be.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { baseGitEnv, type GitAuth, prepareAuth } from '../src/git/credentials.ts';
import { GitError, GitErrorKind } from '../src/git/errors.ts';
import { Repository } from '../src/git/repository.ts';

const execFileP = promisify(execFile);

/** A throwaway key: only its text matters here (ssh -G does not load it). */
const KEY = [
  '-----BEGIN OPENSSH PRIVATE KEY-----',
  'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
  'QyNTUxOQAAACBwZGY1ZjM2YmQ1OGI0YzA2YTc2ZDJlNDU0YTBjMzk4NQAAAJgAAAAAAAAAAAAA',
  '-----END OPENSSH PRIVATE KEY-----',
].join('\n');
const KNOWN_HOSTS =
  '[git.example.com]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHBkZjVmMzZiZDU4YjRjMDZhNzZkMmU0NTRhMGMzOTg1\n';
const SSH: GitAuth = { kind: 'ssh', identity: KEY, knownHosts: KNOWN_HOSTS };

/** Sets process.env entries for one test. */
function withEnv(t: TestContext, vars: Record<string, string>): void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  t.after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

function invalidConfig(fn: () => unknown): void {
  assert.throws(fn, (e: unknown) => e instanceof GitError && e.kind === GitErrorKind.InvalidConfig);
}

async function rejectsInvalidConfig(p: Promise<unknown>): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof GitError && e.kind === GitErrorKind.InvalidConfig);
}

describe('git credentials', () => {
  it('sends basic auth as an extra header scoped to the remote URL, through GIT_CONFIG_* variables', async () => {
    const auth = await prepareAuth(
      { kind: 'basic', username: 'bot', password: 'pass' },
      'https://bot@git.example.com:8443/acme/mirror.git',
    );
    assert.equal(auth.env.GIT_CONFIG_COUNT, '1');
    assert.equal(auth.env.GIT_CONFIG_KEY_0, 'http.https://git.example.com:8443/acme/mirror.git.extraHeader');
    assert.equal(auth.env.GIT_CONFIG_VALUE_0, 'Authorization: Basic Ym90OnBhc3M=');
    await auth.dispose();
  });

  it('real git applies the header to the remote URL and to no other host', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'gitops-reverser-cred-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const auth = await prepareAuth(
      { kind: 'basic', username: 'bot', password: 's3cr3t-t0ken' },
      'https://git.example.com/acme/mirror.git',
    );
    const headerFor = async (url: string): Promise<string> => {
      const { stdout } = await execFileP('git', ['config', '--get-urlmatch', 'http.extraHeader', url], {
        cwd: dir,
        env: auth.env,
      }).catch((e: { stdout: string }) => ({ stdout: e.stdout }));
      return stdout.trim();
    };
    assert.equal(
      await headerFor('https://git.example.com/acme/mirror.git'),
      'Authorization: Basic Ym90OnMzY3IzdC10MGtlbg==',
    );
    assert.equal(await headerFor('https://elsewhere.example.com/acme/mirror.git'), '');
    assert.equal(await headerFor('https://git.example.com/other/repo.git'), '');
  });

  it("keeps the host's git configuration, HOME and credential variables out of every invocation", async (t) => {
    const home = await mkdtemp(join(tmpdir(), 'gitops-reverser-home-'));
    t.after(() => rm(home, { recursive: true, force: true }));
    await writeFile(
      join(home, '.gitconfig'),
      '[user]\n\tname = Leaked Person\n[url "https://evil.example.com/"]\n\tinsteadOf = https://git.example.com/\n',
    );
    await mkdir(join(home, '.config', 'git'), { recursive: true });
    await writeFile(join(home, '.config', 'git', 'config'), '[credential]\n\thelper = leaked-helper\n');
    withEnv(t, {
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      GIT_SSH_COMMAND: 'ssh -o StrictHostKeyChecking=no',
      GIT_ASKPASS: '/bin/echo',
      SSH_AUTH_SOCK: '/tmp/agent.sock',
      GIT_CONFIG_PARAMETERS: "'core.sshcommand'='ssh -o StrictHostKeyChecking=no'",
    });
    // The fixture does leak into a git run with the process environment…
    const leaky = await execFileP('git', ['config', '--list'], { cwd: home, env: process.env });
    assert.match(leaky.stdout, /Leaked Person/);
    // …and into none of ours.
    const env = baseGitEnv();
    const ours = await execFileP('git', ['config', '--list', '--show-origin'], { cwd: home, env });
    assert.equal(ours.stdout, '');
    assert.equal(env.HOME, '/nonexistent');
    assert.equal(env.GIT_CONFIG_NOSYSTEM, '1');
    assert.equal(env.GIT_TERMINAL_PROMPT, '0');
    assert.equal(env.LC_ALL, 'C');
    for (const name of [
      'GIT_SSH_COMMAND',
      'GIT_ASKPASS',
      'SSH_AUTH_SOCK',
      'GIT_CONFIG_PARAMETERS',
      'XDG_CONFIG_HOME',
    ]) {
      assert.equal(env[name], undefined, name);
    }
  });

  it('writes the ssh key and known_hosts as 0600 files in a 0700 folder, removed on dispose', async () => {
    const auth = await prepareAuth(SSH, 'ssh://git@git.example.com:2222/acme/mirror.git');
    const cmd = auth.env.GIT_SSH_COMMAND ?? '';
    const identity = cmd.match(/-i '([^']+)'/)?.[1] ?? '';
    const knownHosts = cmd.match(/UserKnownHostsFile='([^']+)'/)?.[1] ?? '';
    const folder = join(identity, '..');
    assert.equal((await stat(folder)).mode & 0o777, 0o700);
    assert.equal((await stat(identity)).mode & 0o777, 0o600);
    assert.equal((await stat(knownHosts)).mode & 0o777, 0o600);
    assert.equal(await readFile(identity, 'utf8'), `${KEY}\n`, 'a final newline is added: OpenSSH needs it');
    assert.equal(await readFile(knownHosts, 'utf8'), KNOWN_HOSTS);
    for (const value of Object.values(auth.env)) {
      for (const line of KEY.split('\n').slice(1, -1))
        assert.ok(!value.includes(line), 'no key material in env');
    }
    await auth.dispose();
    await assert.rejects(stat(folder), { code: 'ENOENT' });
    await auth.dispose();
  });

  it('real ssh, given our command, checks host keys strictly against only the given known_hosts', async (t) => {
    const tmp = await mkdtemp(join(tmpdir(), 'gitops-reverser-tmp-'));
    t.after(() => rm(tmp, { recursive: true, force: true }));
    withEnv(t, { TMPDIR: tmp });
    await using auth = await prepareAuth(SSH, 'git@git.example.com:acme/mirror.git');
    const cmd = auth.env.GIT_SSH_COMMAND ?? '';
    // git runs GIT_SSH_COMMAND with `sh -c "$GIT_SSH_COMMAND" <args>`; `ssh -G` prints the resulting options.
    const { stdout } = await execFileP('sh', ['-c', `${cmd} -G -p 2222 git@git.example.com`], {
      env: auth.env,
    });
    const options = new Map(
      stdout
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)] as const),
    );
    assert.equal(options.get('stricthostkeychecking'), 'true');
    assert.equal(options.get('batchmode'), 'yes');
    assert.equal(options.get('identitiesonly'), 'yes');
    assert.equal(options.get('identityagent'), 'none');
    assert.equal(options.get('globalknownhostsfile'), '/dev/null');
    const identity = options.get('identityfile') ?? '';
    assert.ok(identity.startsWith(`${tmp}/`), identity);
    assert.equal(await readFile(identity, 'utf8'), `${KEY}\n`);
    assert.equal(await readFile(options.get('userknownhostsfile') ?? '', 'utf8'), KNOWN_HOSTS);
  });

  it('refuses a temp folder whose path ssh would split or unquote, rather than pass it wrongly', async (t) => {
    const odd = await mkdtemp(join(tmpdir(), "gitops reverser's-"));
    t.after(() => rm(odd, { recursive: true, force: true }));
    withEnv(t, { TMPDIR: odd });
    await assert.rejects(prepareAuth(SSH, 'ssh://git@git.example.com/r.git'), /set TMPDIR to a plain path/);
  });

  it('refuses credentials that cannot work with the URL, and URLs that would put a secret in argv', async () => {
    await rejectsInvalidConfig(prepareAuth(SSH, 'https://git.example.com/acme/mirror.git'));
    await rejectsInvalidConfig(
      prepareAuth({ kind: 'basic', username: 'u', password: 'p' }, 'ssh://git@git.example.com/r.git'),
    );
    await rejectsInvalidConfig(prepareAuth({ kind: 'none' }, 'git@git.example.com:acme/mirror.git'));
    await rejectsInvalidConfig(
      prepareAuth({ kind: 'ssh', identity: KEY, knownHosts: ' \n' }, 'ssh://git@git.example.com/r.git'),
    );
    await rejectsInvalidConfig(prepareAuth({ kind: 'none' }, 'ext::sh -c touch% /tmp/pwned'));
    invalidConfig(
      () =>
        new Repository({
          url: 'https://bot:hunter22@git.example.com/r.git',
          branch: 'main',
          dir: '/tmp/unused',
          auth: { kind: 'none' },
        }),
    );
    invalidConfig(
      () =>
        new Repository({
          url: '--upload-pack=touch /tmp/x',
          branch: 'main',
          dir: '/tmp/unused',
          auth: { kind: 'none' },
        }),
    );
  });

  it('a password in the URL is not repeated in the error', () => {
    try {
      new Repository({
        url: 'https://bot:hunter22@git.example.com/r.git',
        branch: 'main',
        dir: '/x',
        auth: { kind: 'none' },
      });
      assert.fail('accepted');
    } catch (e) {
      assert.ok(!String(e).includes('hunter22'), String(e));
    }
  });
});
