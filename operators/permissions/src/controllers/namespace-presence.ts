/**
 * Whether a namespace exists in a client cluster, remembered for a moment. A namespace-level
 * Scope checks each of its namespaces in each cluster on every pass, and its passes come in
 * bursts: every UserRole or GroupRole created in it wakes it (its status lists their
 * Permissions). Without this, applying a folder of 300 roles asked each client apiserver the
 * same few questions hundreds of times within seconds. The answer is reused for
 * {@link NAMESPACE_PRESENCE_TTL_MS}, far below the Scope's own recheck period, which is the
 * delay its status already promises for a namespace created or deleted out of its sight.
 */

/** How long an answer is reused. */
export const NAMESPACE_PRESENCE_TTL_MS = 1_000;

export class NamespacePresence {
  private readonly answers = new Map<string, { readonly at: number; readonly exists: Promise<boolean> }>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(opts: { readonly ttlMs?: number; readonly now?: () => number } = {}) {
    this.ttlMs = opts.ttlMs ?? NAMESPACE_PRESENCE_TTL_MS;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Whether `namespace` exists in cluster `clusterId`, from `ask` or an answer younger than
   * the TTL. Concurrent questions share one request; a failed one is not kept.
   */
  exists(clusterId: string, namespace: string, ask: () => Promise<boolean>): Promise<boolean> {
    const key = `${clusterId}\u0000${namespace}`;
    const now = this.now();
    const known = this.answers.get(key);
    if (known && now - known.at < this.ttlMs) return known.exists;
    const exists = ask();
    this.answers.set(key, { at: now, exists });
    exists.catch(() => {
      if (this.answers.get(key)?.exists === exists) this.answers.delete(key);
    });
    // Bounded by the Scopes' namespaces × clusters; old answers are dropped as they are replaced.
    if (this.answers.size > 10_000) {
      for (const [k, v] of this.answers) if (now - v.at >= this.ttlMs) this.answers.delete(k);
    }
    return exists;
  }
}
