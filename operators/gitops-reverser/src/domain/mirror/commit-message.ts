/**
 * The message of a mirror commit. By default:
 *
 *     gitops-reverser: 3 changes to team-a/prod
 *
 *     CREATE clusters/team-a/apps/deployments/web.yaml
 *     DELETE clusters/team-a/configmaps/old.yaml
 *     UPDATE clusters/team-a/services/web.yaml
 *
 * one line per file, sorted by path, at most {@link MAX_CHANGE_LINES} of them and then
 * `… and N more`, so that a sweep of thousands of files still gives a readable message.
 *
 * A target may set its own template. It is plain text in which three placeholders are
 * replaced (spaces inside the braces are allowed: `{{ target }}`):
 *
 * - `{{target}}`: the target as `namespace/name`;
 * - `{{count}}`: the number of changed files;
 * - `{{changes}}`: the change lines above, one per line (with the same limit).
 *
 * Anything else, including an unknown placeholder such as `{{author}}`, is left as written,
 * and replaced text is not read again (a target name cannot inject a placeholder). An
 * empty or blank template means the default, since Git refuses an empty message.
 */
import type { ChangeOp } from './change.ts';

/** The most change lines a message lists; the rest are counted. */
export const MAX_CHANGE_LINES = 200;

/** What the default subject line starts with, so that mirror commits are easy to find. */
export const COMMIT_SUBJECT_PREFIX = 'gitops-reverser';

/** The placeholders a template may use, in one pass. */
const PLACEHOLDER = /\{\{\s*(target|count|changes)\s*\}\}/g;

/** One changed file of the commit. */
export interface CommitChange {
  readonly op: ChangeOp;
  readonly path: string;
}

export interface CommitInput {
  /** The target, as `namespace/name`. */
  readonly target: string;
  readonly changes: readonly CommitChange[];
}

const byPathThenOp = (a: CommitChange, b: CommitChange): number =>
  a.path < b.path ? -1 : a.path > b.path ? 1 : a.op < b.op ? -1 : a.op > b.op ? 1 : 0;

/** `OP path` per change, sorted by path, cut at {@link MAX_CHANGE_LINES} with a count of the rest. */
export function changeLines(changes: readonly CommitChange[]): string {
  const sorted = [...changes].sort(byPathThenOp);
  const lines = sorted.slice(0, MAX_CHANGE_LINES).map((c) => `${c.op} ${c.path}`);
  if (sorted.length > MAX_CHANGE_LINES) lines.push(`… and ${sorted.length - MAX_CHANGE_LINES} more`);
  return lines.join('\n');
}

/** The commit message for `input`, from `template` or the default. */
export function commitMessage(template: string | undefined, input: CommitInput): string {
  const count = input.changes.length;
  const lines = changeLines(input.changes);
  if (template === undefined || template.trim() === '') {
    const subject = `${COMMIT_SUBJECT_PREFIX}: ${count} ${count === 1 ? 'change' : 'changes'} to ${input.target}`;
    return lines === '' ? subject : `${subject}\n\n${lines}`;
  }
  const values: Readonly<Record<string, string>> = {
    target: input.target,
    count: String(count),
    changes: lines,
  };
  return template.replace(PLACEHOLDER, (whole, name: string) => values[name] ?? whole);
}
