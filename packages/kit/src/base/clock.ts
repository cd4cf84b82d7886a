/**
 * Time as the kit sees it: the current time and one-shot timers, behind an interface
 * so that anything that waits (workqueue delays, backoff, event aggregation windows)
 * can be tested with a {@link FakeClock} that moves only when the test says so,
 * instead of with real sleeps that make tests slow and flaky.
 */

/** An opaque handle to a pending timer, given back to {@link Clock.clearTimeout}. */
export interface TimerHandle {
  readonly __timer: 'TimerHandle';
}

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fn` once, `ms` milliseconds from now (at once, in a later turn, when `ms` ≤ 0). */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a timer that already fired or was cancelled is ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/**
 * The wall clock. Its timers are unref'd: a pending requeue or backoff must never be
 * what keeps a process alive (the manager's servers and watches do that), or a test
 * that forgot to shut a queue down would hang instead of finishing.
 */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref();
    return t as unknown as TimerHandle;
  },
  clearTimeout(handle) {
    clearTimeout(handle as unknown as NodeJS.Timeout);
  },
};

/** Resolves after `ms` on `clock`; rejects with the signal's reason if `signal` aborts first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface FakeTimer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
}

/** Where a {@link FakeClock} starts unless told otherwise: a fixed instant, so test output is stable. */
export const FAKE_CLOCK_EPOCH_MS = Date.UTC(2026, 0, 1);

/**
 * A clock that stands still until {@link advance} moves it. Timers fire in order of
 * due time (ties in the order they were set), each seeing `now()` equal to its due
 * time; timers set by a firing timer fire within the same advance if they fall due.
 */
export class FakeClock implements Clock {
  private current: number;
  private nextId = 1;
  private readonly timers = new Map<number, FakeTimer>();

  constructor(startMs: number = FAKE_CLOCK_EPOCH_MS) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, due: this.current + Math.max(0, ms), fn });
    return { id } as unknown as TimerHandle;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete((handle as unknown as { id: number }).id);
  }

  /** How many timers are pending. */
  get pending(): number {
    return this.timers.size;
  }

  /** The due time of the earliest pending timer, relative to now; undefined when none is pending. */
  nextDueIn(): number | undefined {
    const t = this.earliest();
    return t === undefined ? undefined : t.due - this.current;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, synchronously. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (let t = this.earliestDueBy(target); t !== undefined; t = this.earliestDueBy(target)) {
      this.fire(t);
    }
    this.current = target;
  }

  /**
   * Like {@link advance}, but lets promise chains settle after each timer (and once
   * at the end), for code under test that awaits between timers, such as workers
   * looping on a queue.
   */
  async advanceAsync(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (let t = this.earliestDueBy(target); t !== undefined; t = this.earliestDueBy(target)) {
      this.fire(t);
      await settle();
    }
    this.current = target;
    await settle();
  }

  private fire(t: FakeTimer): void {
    this.timers.delete(t.id);
    this.current = t.due;
    t.fn();
  }

  private earliestDueBy(target: number): FakeTimer | undefined {
    const t = this.earliest();
    return t !== undefined && t.due <= target ? t : undefined;
  }

  private earliest(): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers.values()) {
      if (best === undefined || t.due < best.due || (t.due === best.due && t.id < best.id)) best = t;
    }
    return best;
  }
}

/** Lets every pending promise callback run: one macrotask turn drains the microtask queue. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
