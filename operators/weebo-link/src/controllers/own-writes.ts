/**
 * The targets a link runtime writes, from the moment an apply is sent until its labelled
 * cache shows the apiserver's answer (that resourceVersion) coming back on the watch.
 *
 * It answers two questions the caches alone cannot:
 * - "Is this change my own write coming back?": the watch event of an apply that left
 *   the target Linked brings nothing to decide: the apply's answer was that very object,
 *   and any later change of its source queues the key on its own. Not reconciling it
 *   halves the reconciles of a creation burst. The echo of any other state is reconciled:
 *   a Detaching target's next reconcile evaluates `safe`, and a Detached one may be
 *   reattached by a source that was waiting for the old link to reach its safe state.
 *   The event may come before the answer: changes of a key seen while its apply is in
 *   flight are held, and once the answer is known, any of them that is not the echo of a
 *   Linked write asks for a reconcile.
 * - "Is the cache behind my own write?": a key reconciled in the instant between an
 *   apply's answer and its watch event must not be taken for a missing target (that
 *   would apply it again and count a second creation). Within {@link OWN_WRITE_GRACE_MS}
 *   only: a write whose event never comes (the object deleted at once, a relist that
 *   skipped that version) stops holding the key back after that.
 *
 * Versions are only compared for equality (they are opaque), and a key's entry goes at
 * the first event of that key after the answer, since watch events come in order. One
 * reconcile at a time per key (the workqueue's rule) means one apply in flight per key.
 */
import type { KubeObject, StoreDelta } from '@operators/kit';
import { LinkState, STATE_LABEL } from '../domain/index.ts';

/** How long a write not yet seen in the cache holds its key back. */
export const OWN_WRITE_GRACE_MS = 10_000;

interface Written {
  readonly resourceVersion: string;
  readonly at: number;
  /** The written state needs no decision when it comes back (Linked). */
  readonly settled: boolean;
  /** A reconcile was put off until the cache shows the write: its echo must be reconciled. */
  deferred: boolean;
}

/** What a change seen while an apply was in flight was: a version, or a deletion. */
const DELETED = Symbol('deleted');

export class OwnWrites {
  private readonly unseen = new Map<string, Written>();
  /** Keys whose apply is in flight, with the changes of that key seen meanwhile. */
  private readonly inFlight = new Map<string, (string | typeof DELETED)[]>();
  private readonly now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.now = now;
  }

  /** An apply of the target at `key` is about to be sent. */
  writing(key: string): void {
    this.inFlight.set(key, []);
    this.unseen.delete(key);
  }

  /**
   * The apply's answer (`undefined`: it failed). True when a change seen while it was in
   * flight still needs a reconcile of `key`.
   */
  answered(key: string, applied: KubeObject | undefined): boolean {
    const seen = this.inFlight.get(key) ?? [];
    this.inFlight.delete(key);
    const rv = applied?.metadata.resourceVersion;
    if (!applied || !rv) return seen.length > 0;
    const settled = isSettled(applied);
    const echoed = seen.includes(rv);
    if (!echoed) this.unseen.set(key, { resourceVersion: rv, at: this.now(), settled, deferred: false });
    return seen.some((s) => s !== rv) || (echoed && !settled);
  }

  /**
   * Called with every change of the labelled cache, before it queues a key: true when
   * the change needs no reconcile now (the echo of a settled write of ours, or a change
   * held until the answer of the apply in flight).
   */
  echo(d: StoreDelta<KubeObject>): boolean {
    const key = keyOf(d.object);
    const held = this.inFlight.get(key);
    if (held) {
      held.push(d.type === 'deleted' ? DELETED : (d.object.metadata.resourceVersion ?? ''));
      return true;
    }
    const w = this.unseen.get(key);
    if (!w) return false;
    this.unseen.delete(key);
    return (
      d.type !== 'deleted' &&
      w.settled &&
      !w.deferred &&
      d.object.metadata.resourceVersion === w.resourceVersion
    );
  }

  /**
   * Whether the cache has yet to show a write of ours at `key` answered within the grace
   * period. A reconcile told so returns and waits for the echo, which is then not skipped.
   */
  behind(key: string): boolean {
    const w = this.unseen.get(key);
    if (!w) return false;
    if (this.now() - w.at < OWN_WRITE_GRACE_MS) {
      w.deferred = true;
      return true;
    }
    this.unseen.delete(key);
    return false;
  }

  /** Writes in flight or not seen yet (for tests). */
  get size(): number {
    return this.unseen.size + this.inFlight.size;
  }
}

function isSettled(o: KubeObject): boolean {
  return o.metadata.labels?.[STATE_LABEL] === LinkState.Linked;
}

function keyOf(o: KubeObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;
}
