/**
 * SubjectAccessReviews for the webhooks, with a small cache in front. Every decision of
 * "may this user…" is the apiserver's (RBAC stays the source of truth, wildcards and
 * aggregation included); the cache only saves asking the same question twice in a row.
 *
 * - Keyed by the whole user (name, uid, groups, extra) and the whole attributes: two
 *   users, or one user with another group, never share an answer.
 * - Only "allowed" is kept, for {@link ACCESS_CACHE_TTL_MS}: a right granted a moment
 *   ago takes effect at once (a refused user retrying after `kubectl create rolebinding`
 *   is not refused from the cache), while a right revoked a moment ago may still admit
 *   for up to that long — the same trade-off as the apiserver's own webhook-authorizer
 *   cache, shorter.
 * - Bounded ({@link ACCESS_CACHE_MAX_ENTRIES}, oldest out first), and concurrent
 *   identical questions share one review in flight.
 * - Hits and misses are counted in `permissions_webhook_access_review_cache_total`.
 * - A question about one named object can be asked about its whole kind first
 *   ({@link AccessReviewer.allowedForObject}): that answer covers every name, so a user
 *   who may bind every Permission of a namespace costs one review there, not one per
 *   Permission (the misses that made the webhooks' slowest answers under a bulk apply).
 */
import { type AdmissionUserInfo, type KubeClient, type ManagerOptions, sharedCounter } from '@operators/kit';
import type { AccessQuestion } from '../domain/permission-admission.ts';

export const SUBJECT_ACCESS_REVIEW_GVK = {
  apiVersion: 'authorization.k8s.io/v1',
  kind: 'SubjectAccessReview',
} as const;

/** How long an "allowed" answer is reused. */
export const ACCESS_CACHE_TTL_MS = 10_000;
/** The most answers kept. */
export const ACCESS_CACHE_MAX_ENTRIES = 10_000;

interface SarStatus {
  readonly status?: { readonly allowed?: boolean };
}

interface Entry {
  readonly at: number;
  readonly answer: Promise<boolean>;
}

export interface AccessReviewerOptions {
  readonly ttlMs?: number;
  readonly maxEntries?: number;
  readonly registry?: ManagerOptions['registry'];
  readonly now?: () => number;
}

export class AccessReviewer {
  private readonly client: KubeClient;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private readonly counter;
  private hitCount = 0;
  private missCount = 0;

  constructor(client: KubeClient, opts: AccessReviewerOptions = {}) {
    this.client = client;
    this.ttlMs = opts.ttlMs ?? ACCESS_CACHE_TTL_MS;
    this.maxEntries = opts.maxEntries ?? ACCESS_CACHE_MAX_ENTRIES;
    this.now = opts.now ?? Date.now;
    this.counter = sharedCounter(
      opts.registry,
      'permissions_webhook_access_review_cache_total',
      'SubjectAccessReviews the admission webhooks needed, by whether the cache answered (hit) or the apiserver (miss).',
      ['result'],
    );
  }

  /** Hits and misses so far (also in the metric). */
  stats(): { readonly hits: number; readonly misses: number } {
    return { hits: this.hitCount, misses: this.missCount };
  }

  /** Whether the apiserver lets `user` do what `question` asks. */
  allowed(user: AdmissionUserInfo, question: AccessQuestion, signal?: AbortSignal): Promise<boolean> {
    return this.ask(user, question, false, signal);
  }

  /**
   * Whether `user` may do `question` to the object it names: asked first without the
   * name, then, only if that is refused, with it. An authorizer that allows a verb on a
   * resource with no name allows it on every name (RBAC: a rule without `resourceNames`
   * matches any name, and only such a rule matches a nameless request), so the first
   * answer, when yes, is the answer. The nameless question keeps its refusals too, for
   * the same TTL: a stale refusal only sends the user on to the named question, asked
   * afresh, so a right granted a moment ago still takes effect at once; a stale approval
   * is the same bounded window as any cached approval.
   */
  async allowedForObject(
    user: AdmissionUserInfo,
    question: AccessQuestion,
    signal?: AbortSignal,
  ): Promise<boolean> {
    if (!('resourceAttributes' in question) || question.resourceAttributes.name === undefined) {
      return this.ask(user, question, false, signal);
    }
    const { name: _name, ...kind } = question.resourceAttributes;
    if (await this.ask(user, { resourceAttributes: kind }, true, signal)) return true;
    return this.ask(user, question, false, signal);
  }

  private ask(
    user: AdmissionUserInfo,
    question: AccessQuestion,
    keepRefusal: boolean,
    signal?: AbortSignal,
  ): Promise<boolean> {
    // Apart from the plain question's entries, so that a kept refusal never answers `allowed`.
    const key = `${keepRefusal ? 'kind' : 'exact'} ${cacheKey(user, question)}`;
    const now = this.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < this.ttlMs) {
      this.hitCount++;
      this.counter.inc({ result: 'hit' });
      return hit.answer;
    }
    this.missCount++;
    this.counter.inc({ result: 'miss' });
    const answer = this.review(user, question, signal);
    this.entries.delete(key);
    this.entries.set(key, { at: now, answer });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    // Keep only "allowed" (and a nameless question's refusal, see allowedForObject): drop a
    // refusal or a failure as soon as it is known.
    answer.then(
      (ok) => {
        if (!ok && !keepRefusal && this.entries.get(key)?.answer === answer) this.entries.delete(key);
      },
      () => {
        if (this.entries.get(key)?.answer === answer) this.entries.delete(key);
      },
    );
    return answer;
  }

  private async review(
    user: AdmissionUserInfo,
    question: AccessQuestion,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const review = await this.client.create(
      {
        ...SUBJECT_ACCESS_REVIEW_GVK,
        metadata: {},
        spec: {
          user: user.username,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          ...question,
        },
      },
      signal ? { signal } : {},
    );
    return (review as SarStatus).status?.allowed === true;
  }
}

/** The user and the question, with map keys sorted so that equal inputs give equal keys. */
function cacheKey(user: AdmissionUserInfo, question: AccessQuestion): string {
  const extra = Object.entries(user.extra ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const attrs =
    'nonResourceAttributes' in question
      ? ['url', question.nonResourceAttributes.path, question.nonResourceAttributes.verb]
      : [
          'res',
          question.resourceAttributes.group,
          question.resourceAttributes.resource,
          question.resourceAttributes.subresource ?? '',
          question.resourceAttributes.verb,
          question.resourceAttributes.name ?? '',
          question.resourceAttributes.namespace ?? '',
        ];
  return JSON.stringify([user.username ?? '', user.uid ?? '', user.groups ?? [], extra, attrs]);
}
