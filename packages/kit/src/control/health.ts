/**
 * Named health checks, as controller-runtime's `healthz` package has them: a check is a
 * function that throws (or rejects) to say what is wrong, a set of checks passes when
 * every check passes, and the answer lists each check by name so that a failing probe
 * says which one failed (`[-]informers failed: watch stale: v1/ConfigMap`), always, not
 * only with `?verbose`: a probe's body is read by people, in `kubectl describe pod`.
 *
 * A check is bounded by {@link CHECK_TIMEOUT_MS}: a check that hangs fails as timed out
 * instead of holding the probe's connection until the kubelet gives up on it.
 */

/** Throws, or rejects, with the reason the check fails; returns when it passes. */
export type HealthCheck = () => void | Promise<void>;

/** A check that has not answered within this time fails. */
export const CHECK_TIMEOUT_MS = 5_000;

export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  /** Why it failed; absent when it passed. */
  readonly message?: string;
}

export interface CheckReport {
  readonly ok: boolean;
  readonly results: readonly CheckResult[];
}

export class HealthChecks {
  /** `healthz` or `readyz`: the word of the report's last line. */
  readonly kind: string;
  private readonly checks = new Map<string, HealthCheck>();

  constructor(kind: string) {
    this.kind = kind;
  }

  /** Adds a check; a second check under one name is a mistake, refused. */
  add(name: string, check: HealthCheck): void {
    if (!/^[a-zA-Z0-9][a-zA-Z0-9._-]*$/.test(name)) {
      throw new Error(
        `${this.kind} check name ${JSON.stringify(name)}: letters, digits, '.', '_' and '-' only`,
      );
    }
    if (this.checks.has(name)) throw new Error(`a ${this.kind} check named ${name} exists already`);
    this.checks.set(name, check);
  }

  has(name: string): boolean {
    return this.checks.has(name);
  }

  /** Runs every check (or the one named `only`) at once; resolves the report. */
  async run(only?: string): Promise<CheckReport> {
    const entries = [...this.checks].filter(([name]) => only === undefined || name === only);
    const results = await Promise.all(entries.map(([name, check]) => runOne(name, check)));
    return { ok: results.every((r) => r.ok), results };
  }

  /** controller-runtime's text: one `[+]name ok` or `[-]name failed: why` line per check. */
  render(report: CheckReport): string {
    const lines = report.results.map((r) => (r.ok ? `[+]${r.name} ok` : `[-]${r.name} failed: ${r.message}`));
    lines.push(`${this.kind} check ${report.ok ? 'passed' : 'failed'}`);
    return `${lines.join('\n')}\n`;
  }
}

async function runOne(name: string, check: HealthCheck): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(check),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)),
          CHECK_TIMEOUT_MS,
        );
      }),
    ]);
    return { name, ok: true };
  } catch (err) {
    return { name, ok: false, message: err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}
