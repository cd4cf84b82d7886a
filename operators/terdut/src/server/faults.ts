/**
 * The terdut-server stand-in's fault knobs: what the tests arm to make the server fail,
 * answer garbage, commit-then-hang-up, or be slow. A knob counts matching requests down
 * and then disarms itself, so a test states exactly how many requests go wrong. Armed
 * knobs are consulted in the order they were armed; a request consumes at most one.
 */

export type FaultKind = 'fail' | 'malformed' | 'dropAfterCommit';

/** Absent fields match anything; `path` is tested against the path without its query. */
export interface FaultFilter {
  readonly method?: string;
  readonly path?: RegExp;
}

/** A request the knobs picked. */
export interface Fault {
  readonly kind: FaultKind;
  /** For `fail`: the status to answer. */
  readonly status: number;
}

export const DEFAULT_FAIL_STATUS = 500;
/** The probe path the knobs leave alone unless a filter names it explicitly. */
export const HEALTH_PATH = '/healthz';

interface Armed {
  readonly kind: FaultKind;
  readonly status: number;
  readonly method: string | undefined;
  readonly path: RegExp | undefined;
  remaining: number;
}

export class Faults {
  private armed: Armed[] = [];
  private latency = 0;

  /** Answer the next `n` matching requests with `status` and do nothing else. */
  arm(kind: FaultKind, n: number, filter: FaultFilter = {}, status = DEFAULT_FAIL_STATUS): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`n must be a non-negative integer, got ${n}`);
    if (!Number.isSafeInteger(status) || status < 100 || status > 599) {
      throw new RangeError(`status must be an HTTP status (100-599), got ${status}`);
    }
    if (n === 0) return;
    this.armed.push({
      kind,
      status,
      method: filter.method?.toUpperCase(),
      // A global or sticky regex keeps state between test() calls; match on a stateless copy.
      path: filter.path ? new RegExp(filter.path.source, filter.path.flags.replace(/[gy]/g, '')) : undefined,
      remaining: n,
    });
  }

  /** Every request except the health probe waits this long before it is handled; 0 clears. */
  setLatency(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0)
      throw new RangeError(`latency must be a non-negative number, got ${ms}`);
    this.latency = ms;
  }

  latencyFor(path: string): number {
    return path === HEALTH_PATH ? 0 : this.latency;
  }

  /** Disarm everything and clear the latency. */
  clear(): void {
    this.armed = [];
    this.latency = 0;
  }

  /** The fault for this request, if a knob matches it; consuming one count of that knob. */
  take(method: string, path: string): Fault | undefined {
    const i = this.armed.findIndex((a) => matches(a, method, path));
    const hit = this.armed[i];
    if (!hit) return undefined;
    hit.remaining -= 1;
    if (hit.remaining === 0) this.armed.splice(i, 1);
    return { kind: hit.kind, status: hit.status };
  }
}

function matches(a: Armed, method: string, path: string): boolean {
  if (a.method !== undefined && a.method !== method) return false;
  // The probe is only hit by a knob whose path filter explicitly matches it.
  if (path === HEALTH_PATH && a.path === undefined) return false;
  return a.path === undefined || a.path.test(path);
}
