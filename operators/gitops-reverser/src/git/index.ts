/** The git side of the mirror: one serial writer per (remote, branch), over the real git CLI. */
export {
  baseGitEnv,
  DEFAULT_ALLOWED_PROTOCOLS,
  FIXED_HOME,
  type GitAuth,
  headerScope,
  type PreparedAuth,
  prepareAuth,
  type RemoteKind,
  remoteKind,
  secretsOf,
} from './credentials.ts';
export { classifyGitFailure, GitError, GitErrorKind, isGitError, REDACTED, redact } from './errors.ts';
export { type PathProblem, pathProblem, safeRepoDir, safeRepoPath, UnsafePathError } from './paths.ts';
export {
  type Committer,
  DEFAULT_NETWORK_TIMEOUT_MS,
  type PushResult,
  Repository,
  type RepositoryOptions,
} from './repository.ts';
export {
  BranchWriter,
  type BranchWriterOptions,
  backoffMs,
  type ChangeOp,
  type CloseWindowResult,
  type CommitEvent,
  type CommitPolicy,
  DEFAULT_RETRY,
  defaultCommitMessage,
  type FileChange,
  type PushFailureEvent,
  type RetryPolicy,
  type UnpushedChanges,
  type WriterCounters,
} from './writer.ts';
