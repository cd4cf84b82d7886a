/**
 * Classification of git's stderr into the kinds an operator acts on. The inputs are
 * stderr (and porcelain stdout) captured from real git 2.39, libcurl and OpenSSH 9.2 runs
 * against git-http-backend, sshd and bare repositories (see git-transports.test.ts for
 * the live versions), plus the texts GitHub and GitLab send back, as they print them.
 * The expected kinds are written by hand.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { classifyGitFailure, GitErrorKind, REDACTED, redact } from '../src/git/errors.ts';

const SSH_TAIL =
  'fatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n';

const SAMPLES: readonly {
  name: string;
  stderr: string;
  stdout?: string;
  kind: GitErrorKind;
  says: RegExp;
}[] = [
  {
    name: 'HTTP 401 (git asks for a username it may not prompt for)',
    stderr: "fatal: could not read Username for 'http://127.0.0.1:42055': terminal prompts disabled\n",
    kind: GitErrorKind.AuthFailed,
    says: /401/,
  },
  {
    name: 'GitHub wrong token',
    stderr:
      "remote: Invalid username or password.\nfatal: Authentication failed for 'https://github.com/acme/mirror.git/'\n",
    kind: GitErrorKind.AuthFailed,
    says: /refused the credentials/,
  },
  {
    name: 'GitLab wrong token',
    stderr:
      "remote: HTTP Basic: Access denied. The provided password or token is incorrect.\nfatal: Authentication failed for 'https://gitlab.com/acme/mirror.git/'\n",
    kind: GitErrorKind.AuthFailed,
    says: /refused the credentials/,
  },
  {
    name: 'HTTP 403',
    stderr:
      "fatal: unable to access 'http://127.0.0.1:38169/r.git/': The requested URL returned error: 403\n",
    kind: GitErrorKind.AuthFailed,
    says: /403/,
  },
  {
    name: 'HTTP 404 from git-http-backend',
    stderr: "fatal: repository 'http://127.0.0.1:42055/nope.git/' not found\n",
    kind: GitErrorKind.RepositoryNotFound,
    says: /no such repository/,
  },
  {
    name: 'GitHub over ssh, repository not found',
    stderr: `ERROR: Repository not found.\n${SSH_TAIL}`,
    kind: GitErrorKind.RepositoryNotFound,
    says: /no such repository/,
  },
  {
    name: 'HTTP 502 from a proxy',
    stderr:
      "fatal: unable to access 'http://127.0.0.1:38169/five.git/': The requested URL returned error: 502\n",
    kind: GitErrorKind.Unreachable,
    says: /HTTP 502/,
  },
  {
    name: 'HTTP connection refused',
    stderr:
      "fatal: unable to access 'http://127.0.0.1:9/r.git/': Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server\n",
    kind: GitErrorKind.Unreachable,
    says: /cannot reach/,
  },
  {
    name: 'HTTPS name that does not resolve',
    stderr:
      "fatal: unable to access 'https://nonexistent.invalid/r.git/': Could not resolve host: nonexistent.invalid\n",
    kind: GitErrorKind.Unreachable,
    says: /cannot resolve the remote's host name nonexistent\.invalid/,
  },
  {
    name: 'file:// path without a repository',
    stderr: `fatal: '/tmp/cap-lTsIiu/missing.git' does not appear to be a git repository\n${SSH_TAIL}`,
    kind: GitErrorKind.RepositoryNotFound,
    says: /no such repository/,
  },
  {
    name: 'a transport outside GIT_ALLOW_PROTOCOL',
    stderr: "fatal: transport 'file' not allowed\n",
    kind: GitErrorKind.InvalidConfig,
    says: /file transport is not allowed/,
  },
  {
    name: 'push behind a newer remote tip (fetch first)',
    stderr:
      "error: failed to push some refs to '/tmp/cap-lTsIiu/r.git'\nhint: Updates were rejected because the remote contains work that you do\nhint: not have locally.\n",
    stdout: 'To /tmp/cap-lTsIiu/r.git\n!\tHEAD:refs/heads/main\t[rejected] (fetch first)\nDone\n',
    kind: GitErrorKind.PushRejected,
    says: /someone else pushed/,
  },
  {
    name: 'push that is not a fast-forward',
    stderr: "error: failed to push some refs to '/tmp/cap-lTsIiu/r.git'\n",
    stdout: 'To /tmp/cap-lTsIiu/r.git\n!\tHEAD:refs/heads/main\t[rejected] (non-fast-forward)\nDone\n',
    kind: GitErrorKind.PushRejected,
    says: /someone else pushed/,
  },
  {
    name: 'push declined by the server (a protected branch), which a replay cannot fix',
    stderr:
      "remote: error: GH006: Protected branch update failed for refs/heads/main.\nerror: failed to push some refs to 'https://github.com/acme/mirror.git'\n",
    stdout:
      'To https://github.com/acme/mirror.git\n!\tHEAD:refs/heads/main\t[remote rejected] (protected branch hook declined)\nDone\n',
    kind: GitErrorKind.Other,
    says: /refused the push \(protected branch hook declined\)/,
  },
  {
    name: 'fetch of a branch the remote lacks',
    stderr: "fatal: couldn't find remote ref refs/heads/nope\n",
    kind: GitErrorKind.BranchNotFound,
    says: /no branch nope$/,
  },
  {
    name: 'ssh host key changed',
    stderr:
      '@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n' +
      'IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\r\nHost key for [127.0.0.1]:36495 has changed and you have requested strict checking.\r\n' +
      `Host key verification failed.\r\n${SSH_TAIL}`,
    kind: GitErrorKind.HostKeyMismatch,
    says: /different from the one in known_hosts/,
  },
  {
    name: 'ssh host not in known_hosts',
    stderr: `No ED25519 host key is known for [127.0.0.1]:36495 and you have requested strict checking.\r\nHost key verification failed.\r\n${SSH_TAIL}`,
    kind: GitErrorKind.HostKeyMismatch,
    says: /for \[127\.0\.0\.1\]:36495 is not in the given known_hosts/,
  },
  {
    name: 'ssh key refused',
    stderr: `root@127.0.0.1: Permission denied (publickey).\r\n${SSH_TAIL}`,
    kind: GitErrorKind.AuthFailed,
    says: /Permission denied, methods tried: publickey/,
  },
  {
    name: 'ssh path without a repository',
    stderr: `fatal: '/tmp/cap-lTsIiu/nope.git' does not appear to be a git repository\n${SSH_TAIL}`,
    kind: GitErrorKind.RepositoryNotFound,
    says: /no such repository/,
  },
  {
    name: 'ssh connection refused',
    stderr: `ssh: connect to host 127.0.0.1 port 9: Connection refused\r\n${SSH_TAIL}`,
    kind: GitErrorKind.Unreachable,
    says: /cannot reach/,
  },
  {
    name: 'ssh host name that does not resolve',
    stderr: `ssh: Could not resolve hostname nonexistent.invalid: Name or service not known\r\n${SSH_TAIL}`,
    kind: GitErrorKind.Unreachable,
    says: /cannot resolve the remote's host name nonexistent\.invalid/,
  },
];

describe('git failure classification (stderr captured from real git, curl and OpenSSH)', () => {
  for (const s of SAMPLES) {
    it(`classifies ${s.name} as ${s.kind}`, () => {
      const e = classifyGitFailure('push https://example.com/r.git', s.stderr, [], s.stdout);
      assert.equal(e.kind, s.kind, e.message);
      assert.match(e.message, /^push https:\/\/example\.com\/r\.git: /);
      assert.match(e.message, s.says);
    });
  }

  it('keeps git\'s own last words for an unknown failure, without its "hint:" lines', () => {
    const e = classifyGitFailure(
      'commit',
      'hint: try this\nhint: or that\nfatal: unable to write new index file\n',
      [],
    );
    assert.equal(e.kind, GitErrorKind.Other);
    assert.equal(e.message, 'commit: unable to write new index file');
    assert.equal(e.detail, 'fatal: unable to write new index file');
  });

  it('never lets a secret through, even when a server echoes it into stderr', () => {
    const token = 'ghp_0123456789abcdefSECRET';
    const e = classifyGitFailure(
      'fetch',
      `remote: token ${token} is expired\nfatal: Authentication failed for 'https://x:${token}@github.com/a/b.git/'\n`,
      [token],
    );
    assert.equal(e.kind, GitErrorKind.AuthFailed);
    assert.ok(!e.message.includes(token) && !e.detail.includes(token), `${e.message}\n${e.detail}`);
    assert.ok(e.detail.includes(REDACTED));
  });
});

describe('redact', () => {
  it('removes every occurrence of every secret of four characters or more', () => {
    fc.assert(
      fc.property(
        // Upper case and digits: the lower-case replacement can never form a new occurrence.
        fc.array(fc.stringMatching(/^[A-Z0-9]{4,20}$/), { minLength: 1, maxLength: 3 }),
        fc.array(fc.string({ maxLength: 10 }), { maxLength: 5 }),
        (secrets, filler) => {
          // The text interleaves filler with every secret, twice.
          const text = [...filler, ...secrets, ...filler.reverse(), ...secrets].join('|');
          const out = redact(text, secrets);
          for (const s of secrets) assert.ok(!out.includes(s), JSON.stringify({ s, out }));
        },
      ),
    );
  });

  it('removes each line of a private key on its own, so a quoted fragment of the key is gone too', () => {
    const key =
      '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBwZGY1ZjM2YmQ1OGI0YzA2YTc2ZDJlNDU0YTBjMzk4NQAAAJgAAAAAAAAAAAAA\n-----END OPENSSH PRIVATE KEY-----\n';
    const out = redact(
      'Load key: QyNTUxOQAAACBwZGY1ZjM2YmQ1OGI0YzA2YTc2ZDJlNDU0YTBjMzk4NQAAAJgAAAAAAAAAAAAA bad',
      [key],
    );
    assert.equal(out, `Load key: ${REDACTED} bad`);
  });
});
