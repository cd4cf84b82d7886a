/**
 * Why a git command failed, in the kinds an operator (and a retry policy) tells apart.
 *
 * git says everything on stderr in free text, so the kind is read from that text with
 * `LC_ALL=C` set on every invocation (see credentials.ts), which keeps the messages in
 * English whatever the pod's locale. The patterns below are the messages git 2.39,
 * libcurl and OpenSSH print; anything not recognised is `Other` and keeps git's own last
 * line, so an unknown failure is still legible rather than mislabelled.
 *
 * Secrets never reach a message: every text that leaves this module went through
 * {@link redact} with the invocation's secrets (password, token, the Basic header, the
 * private key), even though git itself does not print them, because a future git or a
 * server's reply quoted by git might.
 */

/** The kinds of git failure. */
export const GitErrorKind = {
  /** No answer: connection refused, DNS failure, timeout, a 5xx from a proxy. Retried. */
  Unreachable: 'Unreachable',
  /** The server refused our credentials (HTTP 401/403, ssh "Permission denied"). */
  AuthFailed: 'AuthFailed',
  /** The ssh server's host key is not the one in known_hosts (changed, or not listed). */
  HostKeyMismatch: 'HostKeyMismatch',
  /** The server answered but has no such repository (or hides it from these credentials). */
  RepositoryNotFound: 'RepositoryNotFound',
  /** The remote has no such branch (a new branch is created by the first push instead). */
  BranchNotFound: 'BranchNotFound',
  /** The push was not a fast-forward: someone else pushed first. Replayed, never forced. */
  PushRejected: 'PushRejected',
  /** The remote URL and the credentials cannot work together (say, ssh keys for an https URL). */
  InvalidConfig: 'InvalidConfig',
  /** Anything else; the message carries git's own words. */
  Other: 'Other',
} as const;
export type GitErrorKind = (typeof GitErrorKind)[keyof typeof GitErrorKind];

/** A failed git command, with a short message an operator can act on. */
export class GitError extends Error {
  override readonly name = 'GitError';
  readonly kind: GitErrorKind;
  /** git's stderr (redacted, trimmed to its last lines), for logs; the message is the summary. */
  readonly detail: string;
  constructor(kind: GitErrorKind, message: string, detail = '') {
    super(message);
    this.kind = kind;
    this.detail = detail;
  }
}

export function isGitError(err: unknown, kind?: GitErrorKind): err is GitError {
  return err instanceof GitError && (kind === undefined || err.kind === kind);
}

/** What replaces a secret in any text we keep. */
export const REDACTED = '[redacted]';

/** Secrets shorter than this are not searched for: replacing every "a" would garble the text and hide nothing. */
const MIN_SECRET_LENGTH = 4;

/** Lines of git's stderr kept in `detail`: the cause is at the end; hints before it are noise. */
const DETAIL_LINES = 6;

/** `text` with every occurrence of every secret (and of each of its lines, for keys) replaced. */
export function redact(text: string, secrets: readonly string[]): string {
  const needles = new Set<string>();
  for (const s of secrets) {
    if (s.length >= MIN_SECRET_LENGTH) needles.add(s);
    // A key could be quoted line by line; its header lines are public and short enough to keep.
    for (const line of s.split(/\r?\n/)) if (line.trim().length >= 16) needles.add(line.trim());
  }
  let out = text;
  // Longest first, so a secret that contains another is replaced whole.
  for (const n of [...needles].sort((a, b) => b.length - a.length)) out = out.split(n).join(REDACTED);
  return out;
}

interface Rule {
  readonly kind: GitErrorKind;
  readonly pattern: RegExp;
  readonly message: (m: RegExpMatchArray, stderr: string) => string;
}

/**
 * Checked in order: host-key and auth failures first, because git follows both with the
 * generic "Could not read from remote repository" that would otherwise look like a
 * missing repository; "not found" before "unreachable" for the same reason.
 */
const RULES: readonly Rule[] = [
  {
    kind: GitErrorKind.InvalidConfig,
    pattern: /transport '([^']+)' not allowed/,
    message: (m) => `the ${m[1]} transport is not allowed for remotes of this operator`,
  },
  {
    kind: GitErrorKind.HostKeyMismatch,
    pattern: /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for \S+ has changed/,
    message: () =>
      'the ssh server presented a host key different from the one in known_hosts; ' +
      'nothing was sent (if the server really changed its key, update known_hosts)',
  },
  {
    kind: GitErrorKind.HostKeyMismatch,
    pattern:
      /No \S+ host key is known for (\S+)|Host key verification failed|no matching host key type found/,
    message: (m) =>
      `the ssh server's host key${m[1] ? ` for ${m[1]}` : ''} is not in the given known_hosts; ` +
      'nothing was sent (add the server\'s key, as "ssh-keyscan" prints it, to known_hosts)',
  },
  {
    kind: GitErrorKind.AuthFailed,
    pattern: /Permission denied \(([^)]*)\)/,
    message: (m) => `the ssh server refused the key (Permission denied, methods tried: ${m[1]})`,
  },
  {
    kind: GitErrorKind.AuthFailed,
    pattern:
      /could not read (?:Username|Password) for|Authentication failed for|HTTP Basic: Access denied|The requested URL returned error: 401/,
    message: () => 'the server refused the credentials (HTTP 401): check the username and token',
  },
  {
    kind: GitErrorKind.AuthFailed,
    pattern:
      /The requested URL returned error: 403|unable to access '[^']*': The requested URL returned error: 403/,
    message: () => 'the server denied access (HTTP 403): the token lacks permission on this repository',
  },
  {
    kind: GitErrorKind.BranchNotFound,
    pattern: /couldn't find remote ref (\S+)|Remote branch (\S+) not found/,
    message: (m) => `the remote has no branch ${(m[1] ?? m[2] ?? '').replace(/^refs\/heads\//, '')}`,
  },
  {
    kind: GitErrorKind.PushRejected,
    pattern: /\[rejected\][^\n]*\((?:fetch first|non-fast-forward)\)|Updates were rejected because/,
    message: () => 'the push was rejected because the branch moved on the remote (someone else pushed)',
  },
  {
    kind: GitErrorKind.RepositoryNotFound,
    pattern:
      /does not appear to be a git repository|[Rr]epository not found|repository '[^']*' not found|The requested URL returned error: 404/,
    message: () => 'the remote has no such repository (or hides it from these credentials)',
  },
  {
    kind: GitErrorKind.Unreachable,
    pattern:
      /Could not resolve host(?:name)?:? ?(\S*)|Name or service not known|Temporary failure in name resolution/,
    message: (m) => `cannot resolve the remote's host name${m[1] ? ` ${m[1].replace(/:$/, '')}` : ''}`,
  },
  {
    kind: GitErrorKind.Unreachable,
    pattern:
      /Connection refused|Couldn't connect to server|Failed to connect to|Network is unreachable|No route to host|Connection timed out|Operation timed out|timed out after|Connection reset|Connection closed by|early EOF|The remote end hung up unexpectedly/,
    message: () => 'cannot reach the remote (connection refused, reset or timed out)',
  },
  {
    kind: GitErrorKind.Unreachable,
    pattern: /The requested URL returned error: (5\d\d)/,
    message: (m) => `the remote answered HTTP ${m[1]}: the server or a proxy in front of it is failing`,
  },
];

/** The last few non-hint lines of git's stderr, redacted. */
function detailOf(stderr: string, secrets: readonly string[]): string {
  const lines = redact(stderr, secrets)
    .split(/\r?\n/)
    .map((l) => l.trimEnd())
    .filter((l) => l !== '' && !l.startsWith('hint:'));
  return lines.slice(-DETAIL_LINES).join('\n');
}

/**
 * The typed failure for a git command that exited non-zero with this stderr (and, for
 * `git push --porcelain`, this stdout: the rejection line is printed there).
 */
export function classifyGitFailure(
  what: string,
  stderr: string,
  secrets: readonly string[],
  stdout = '',
): GitError {
  const text = `${stderr}\n${stdout}`;
  const detail = detailOf(text, secrets);
  for (const rule of RULES) {
    const m = text.match(rule.pattern);
    if (m) return new GitError(rule.kind, redact(`${what}: ${rule.message(m, text)}`, secrets), detail);
  }
  const remoteRejected = text.match(/\[remote rejected\][^(\n]*\(([^)\n]*)\)/);
  if (remoteRejected) {
    return new GitError(
      GitErrorKind.Other,
      redact(
        `${what}: the remote refused the push (${remoteRejected[1]}); is the branch protected?`,
        secrets,
      ),
      detail,
    );
  }
  const last = detail.split('\n').filter((l) => l.startsWith('fatal:') || l.startsWith('error:'));
  const summary = (last.at(-1) ?? detail.split('\n').at(-1) ?? '').replace(/^(?:fatal|error): /, '');
  return new GitError(GitErrorKind.Other, `${what}: ${summary || 'git failed without saying why'}`, detail);
}
