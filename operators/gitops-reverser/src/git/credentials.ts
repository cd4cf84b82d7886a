/**
 * The environment of one git invocation: credentials without a secret in argv, and
 * nothing of the pod's (or a developer's) own git and ssh configuration.
 *
 * Why each piece:
 * - argv is world-readable (`ps`, /proc/<pid>/cmdline), the environment is readable only
 *   by the same user. So the Basic header travels as `GIT_CONFIG_KEY_n/VALUE_n`, and the
 *   ssh key as a 0600 file in a 0700 folder that is removed when the invocation ends.
 * - The header is scoped to the remote's URL (`http.<url>.extraHeader`): a redirect to
 *   another host does not receive the token.
 * - Host keys are always checked (`StrictHostKeyChecking=yes` with only the known_hosts
 *   given by the user; no global file, no "accept new"). There is no way to turn this off.
 * - `GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`, a fixed `HOME` and `ssh -F
 *   /dev/null`: no credential helper, signing key, url rewrite or ssh option of the host
 *   leaks into what the operator does. ssh reads `~/.ssh` from the passwd entry, not
 *   from `HOME`, hence `-F /dev/null` and the explicit files.
 * - `GIT_TERMINAL_PROMPT=0` and `BatchMode=yes`: a wrong credential fails at once
 *   instead of waiting for a person to type a password.
 * - `LC_ALL=C`: errors.ts classifies git's English messages.
 * - `GIT_ALLOW_PROTOCOL`: the URL comes from a custom resource; `ext::` (run a command)
 *   and local paths are refused unless the caller allows them.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitError, GitErrorKind } from './errors.ts';

/** How the operator authenticates to a remote. */
export type GitAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'basic'; readonly username: string; readonly password: string }
  | {
      readonly kind: 'ssh';
      /** A private key, PEM or OpenSSH format, unencrypted. */
      readonly identity: string;
      /** known_hosts lines for the server, e.g. `[git.example.com]:2222 ssh-ed25519 AAAA…`. */
      readonly knownHosts: string;
    };

/**
 * `HOME` for git: a path that never holds a configuration (Debian's home for `nobody`).
 * git ignores a missing `~/.gitconfig`; nothing is ever written there.
 */
export const FIXED_HOME = '/nonexistent';

/** Variables taken from the operator's environment: what git needs to run and reach a proxy; nothing else. */
const PASSED_THROUGH_ENV = [
  'PATH',
  'TMPDIR',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
] as const;

/** Transports allowed unless the caller says otherwise: the network ones a GitProvider may name. */
export const DEFAULT_ALLOWED_PROTOCOLS: readonly string[] = ['https', 'http', 'ssh'];

/** Seconds ssh waits for the TCP connection, so an unreachable server fails in time for a retry. */
const SSH_CONNECT_TIMEOUT_S = 20;

/** Where a remote lives, as far as credentials are concerned. */
export type RemoteKind = 'http' | 'ssh' | 'file';

/**
 * The transport of a remote URL: `http(s)://`, `ssh://` or scp-like `user@host:path`,
 * `file://` or a local path. Refuses forms that would put a secret in argv (a password in
 * the URL) or be read as an option (a leading dash).
 */
export function remoteKind(url: string): RemoteKind {
  if (url.startsWith('-'))
    throw new GitError(GitErrorKind.InvalidConfig, 'the remote URL must not start with "-"');
  if (/^https?:\/\//i.test(url)) {
    const u = parseUrl(url);
    if (u.password !== '') {
      throw new GitError(
        GitErrorKind.InvalidConfig,
        'the remote URL must not contain a password: put the token in the credentials Secret',
      );
    }
    return 'http';
  }
  if (/^ssh:\/\//i.test(url) || /^git\+ssh:\/\//i.test(url) || /^ssh\+git:\/\//i.test(url)) return 'ssh';
  if (/^file:\/\//i.test(url) || url.startsWith('/')) return 'file';
  // scp-like: [user@]host:path, where host has no slash before the colon (git's own rule).
  if (/^[^/:]+:/.test(url) && !url.includes('::')) return 'ssh';
  throw new GitError(
    GitErrorKind.InvalidConfig,
    `unsupported remote URL ${JSON.stringify(redactUrl(url))}: use https://, ssh:// or user@host:path`,
  );
}

function parseUrl(url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new GitError(GitErrorKind.InvalidConfig, 'the remote URL is not a valid URL');
  }
}

/** A URL with any userinfo password removed, for messages. */
function redactUrl(url: string): string {
  return url.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:[redacted]@');
}

/**
 * The URL git matches `http.<url>.*` against: scheme, host, port and path of the remote,
 * without user name, query or fragment (git matches the path as a prefix on segment
 * boundaries, so the repository's own path scopes the header to that repository).
 */
export function headerScope(url: string): string {
  const u = parseUrl(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
}

/** The secrets of `auth`, in every form git or a server might echo: redacted from all messages. */
export function secretsOf(auth: GitAuth): string[] {
  switch (auth.kind) {
    case 'none':
      return [];
    case 'basic':
      return [
        basicHeader(auth),
        Buffer.from(`${auth.username}:${auth.password}`).toString('base64'),
        `${auth.username}:${auth.password}`,
        auth.password,
      ];
    case 'ssh':
      return [auth.identity];
  }
}

function basicHeader(auth: { readonly username: string; readonly password: string }): string {
  return `Authorization: Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
}

/** The environment every git invocation starts from (no credentials). */
export function baseGitEnv(
  allowedProtocols: readonly string[] = DEFAULT_ALLOWED_PROTOCOLS,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of PASSED_THROUGH_ENV) {
    const v = process.env[name];
    if (v !== undefined) env[name] = v;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return {
    ...env,
    HOME: FIXED_HOME,
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ALLOW_PROTOCOL: allowedProtocols.join(':'),
  };
}

/** The environment of one network invocation, and what to clean up after it. */
export interface PreparedAuth extends AsyncDisposable {
  readonly env: Readonly<Record<string, string>>;
  /** Every form of the secret, for {@link redact}. */
  readonly secrets: readonly string[];
  /** Removes the temp folder of an ssh key; safe to call twice. */
  dispose(): Promise<void>;
}

/**
 * Paths ssh reads safely inside `-o Option=value`: ssh splits option values on blanks
 * and has quoting rules of its own, so the key files live under a path without either.
 */
const PLAIN_PATH = /^[A-Za-z0-9_./+-]+$/;

/** `s` quoted for the POSIX shell git runs `GIT_SSH_COMMAND` with. */
function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** A key file must end with a newline, or OpenSSH refuses it as "invalid format". */
function withFinalNewline(s: string): string {
  return s.endsWith('\n') ? s : `${s}\n`;
}

/**
 * Prepares the environment for one git invocation that talks to `remoteUrl`. The caller
 * runs git with `env` and then calls `dispose()` (or uses `await using`). Throws
 * InvalidConfig when the credentials cannot work with this URL's transport.
 */
export async function prepareAuth(
  auth: GitAuth,
  remoteUrl: string,
  allowedProtocols: readonly string[] = DEFAULT_ALLOWED_PROTOCOLS,
): Promise<PreparedAuth> {
  const kind = remoteKind(remoteUrl);
  const env = baseGitEnv(allowedProtocols);
  const secrets = secretsOf(auth);
  const done = async (): Promise<void> => {};
  const prepared = (dispose: () => Promise<void>): PreparedAuth => ({
    env,
    secrets,
    dispose,
    [Symbol.asyncDispose]: dispose,
  });
  switch (auth.kind) {
    case 'none':
      if (kind === 'ssh') {
        throw new GitError(
          GitErrorKind.InvalidConfig,
          'an ssh remote needs ssh credentials (a private key and known_hosts)',
        );
      }
      return prepared(done);
    case 'basic': {
      if (kind !== 'http') {
        throw new GitError(
          GitErrorKind.InvalidConfig,
          'username/password credentials work only with an http(s) remote URL',
        );
      }
      env.GIT_CONFIG_COUNT = '1';
      env.GIT_CONFIG_KEY_0 = `http.${headerScope(remoteUrl)}.extraHeader`;
      env.GIT_CONFIG_VALUE_0 = basicHeader(auth);
      return prepared(done);
    }
    case 'ssh': {
      if (kind !== 'ssh') {
        throw new GitError(GitErrorKind.InvalidConfig, 'ssh credentials work only with an ssh remote URL');
      }
      if (auth.knownHosts.trim() === '') {
        throw new GitError(
          GitErrorKind.InvalidConfig,
          'ssh credentials need known_hosts: host keys are always checked',
        );
      }
      const base = tmpdir();
      if (!PLAIN_PATH.test(base)) {
        throw new GitError(
          GitErrorKind.InvalidConfig,
          `the temp folder ${JSON.stringify(base)} has characters ssh cannot take in an option; set TMPDIR to a plain path`,
        );
      }
      // mkdtemp creates the folder 0700; the files are created 0600 and never exist with wider modes.
      const dir = await mkdtemp(join(base, 'gitops-reverser-ssh-'));
      let removed = false;
      const dispose = async (): Promise<void> => {
        if (removed) return;
        removed = true;
        await rm(dir, { recursive: true, force: true });
      };
      try {
        const identity = join(dir, 'identity');
        const knownHosts = join(dir, 'known_hosts');
        await writeFile(identity, withFinalNewline(auth.identity), { mode: 0o600, flag: 'wx' });
        await writeFile(knownHosts, withFinalNewline(auth.knownHosts), { mode: 0o600, flag: 'wx' });
        env.GIT_SSH_VARIANT = 'ssh';
        env.GIT_SSH_COMMAND = [
          'ssh',
          '-F /dev/null',
          `-i ${shellQuote(identity)}`,
          '-o IdentitiesOnly=yes',
          '-o IdentityAgent=none',
          `-o UserKnownHostsFile=${shellQuote(knownHosts)}`,
          '-o GlobalKnownHostsFile=/dev/null',
          '-o StrictHostKeyChecking=yes',
          '-o UpdateHostKeys=no',
          '-o BatchMode=yes',
          `-o ConnectTimeout=${SSH_CONNECT_TIMEOUT_S}`,
        ].join(' ');
      } catch (err) {
        await dispose();
        throw err;
      }
      return prepared(dispose);
    }
  }
}
