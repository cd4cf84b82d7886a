/**
 * Every failure of the control plane that a user can act on is a ControlPlaneError:
 * one sentence naming the cause, one naming the fix, and the tail of any log that
 * explains it. Tests and the CLI print it as is; nothing retries it blindly.
 */
export class ControlPlaneError extends Error {
  override readonly name = 'ControlPlaneError';
  readonly fix: string;
  readonly detail: string | undefined;

  constructor(cause: string, fix: string, detail?: string) {
    super(`${cause}\n  fix: ${fix}${detail ? `\n  detail:\n${indent(detail)}` : ''}`);
    this.fix = fix;
    this.detail = detail;
  }
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}

/** The last `n` lines of a log, for an error message that shows why a process failed. */
export function tail(text: string, n = 25): string {
  const lines = text.trimEnd().split('\n');
  return lines.slice(Math.max(0, lines.length - n)).join('\n');
}
