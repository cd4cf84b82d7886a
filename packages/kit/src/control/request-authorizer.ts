/**
 * Who may read an HTTP endpoint, decided by the apiserver, as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` decides it for `/metrics`: the bearer
 * token goes to a TokenReview (who is this?), the user it names to a
 * SubjectAccessReview on the non-resource URL (may they `get /metrics`?). RBAC grants
 * it as usual:
 *
 *   rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]
 *
 * Decisions are cached briefly ({@link AUTH_CACHE_TTL_MS}, by a hash of the token and
 * the path): Prometheus scrapes every few seconds, and two reviews per scrape would be
 * most of the load it puts on the apiserver. A revoked grant is honoured within the TTL.
 * Refusals are cached too, unauthenticated and forbidden alike (a client retrying a bad
 * token costs one review per TTL), in a cache of their own: a flood of made-up tokens
 * cannot evict the scraper's allowance. Errors (apiserver unreachable) are not cached,
 * and answer 500, not 403: a scraper should retry, not conclude it is forbidden.
 *
 * A flood of requests with random tokens (each one new, so no cache helps) must not
 * reach the apiserver, nor the operator's own client: measured on the manager's client,
 * 200 connections of them queued TokenReviews in its 20 qps bucket until the leader's
 * renewals, waiting in the same bucket, lost the lease in 10 s. So:
 * - reviews go through a client of their own ({@link reviewClient}, which the Manager
 *   uses): own connections, own small budget ({@link REVIEW_RATE_LIMIT});
 * - at most {@link MAX_CONCURRENT_REVIEWS} distinct reviews run at once; beyond that a
 *   request is answered 429 with Retry-After at once, never queued;
 * - concurrent requests with the same token (and path and verb) share one review.
 */
import { createHash } from 'node:crypto';
import type { KubeClient } from '../client/client.ts';
import type { RateLimit } from '../client/token-bucket.ts';
import type { KubeObject } from '../client/types.ts';

/** How long one decision (allowed, unauthenticated or forbidden) is reused. */
export const AUTH_CACHE_TTL_MS = 10_000;
/**
 * Decisions remembered at most, allowed and refused each; the oldest is forgotten
 * first. Refusals are remembered apart, so that made-up tokens only evict each other.
 */
export const AUTH_CACHE_MAX = 1024;
/** The bound on each review (the wait for the review budget included): a scrape must not hang on a slow apiserver. */
export const REVIEW_TIMEOUT_MS = 5_000;
/**
 * Reviews in flight at once, at most (one review: a TokenReview, then a
 * SubjectAccessReview if the token is valid). Prometheus needs one per TTL per token;
 * eight is room for several scrapers at once while bounding what a flood can hold.
 */
export const MAX_CONCURRENT_REVIEWS = 8;
/**
 * The review client's own budget: a few scrapers need a review each per
 * {@link AUTH_CACHE_TTL_MS}, far below this; a flood gets this much of the apiserver
 * and no more, and none of the operator's own client budget.
 */
export const REVIEW_RATE_LIMIT: RateLimit = { qps: 5, burst: 10 };
/** The Retry-After of a request refused because {@link MAX_CONCURRENT_REVIEWS} were busy. */
export const OVERLOADED_RETRY_AFTER_SECONDS = 1;

/**
 * The client to give a {@link RequestAuthorizer}: `client`'s server and credentials on
 * connections of its own (one per concurrent review), with its own bucket
 * ({@link REVIEW_RATE_LIMIT}) and each request bounded by {@link REVIEW_TIMEOUT_MS}.
 * Close its transport when the authorizer is done.
 */
export function reviewClient(client: KubeClient): KubeClient {
  return client.isolated({
    rateLimit: REVIEW_RATE_LIMIT,
    timeoutMs: REVIEW_TIMEOUT_MS,
    connections: MAX_CONCURRENT_REVIEWS,
  });
}

/** The outcome of authorizing one request, with the HTTP status it maps to. */
export type AuthDecision =
  /** The token names a user RBAC allows: 200. */
  | { readonly kind: 'allowed'; readonly user: string }
  /** No token, or one the apiserver does not accept: 401. */
  | { readonly kind: 'unauthenticated'; readonly message: string }
  /** A valid token whose user may not do this: 403. */
  | { readonly kind: 'forbidden'; readonly user: string; readonly message: string }
  /** The reviews themselves failed: 500, not cached. */
  | { readonly kind: 'error'; readonly message: string }
  /** {@link MAX_CONCURRENT_REVIEWS} reviews were in flight: 429 with Retry-After, not cached, no review sent. */
  | { readonly kind: 'overloaded'; readonly message: string; readonly retryAfterSeconds: number };

export function decisionStatus(d: AuthDecision): number {
  switch (d.kind) {
    case 'allowed':
      return 200;
    case 'unauthenticated':
      return 401;
    case 'forbidden':
      return 403;
    case 'error':
      return 500;
    case 'overloaded':
      return 429;
    default: {
      const never: never = d;
      return never;
    }
  }
}

type TokenReview = KubeObject & {
  status?: {
    authenticated?: boolean;
    error?: string;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  };
};
type SubjectAccessReview = KubeObject & {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
};

/** A decision the apiserver gave, cached: the ones worth reusing. */
type Reviewed = Extract<AuthDecision, { kind: 'allowed' | 'unauthenticated' | 'forbidden' }>;

interface Cached {
  readonly decision: Reviewed;
  readonly until: number;
}

export interface RequestAuthorizerOptions {
  /** Distinct reviews in flight at once, at most; {@link MAX_CONCURRENT_REVIEWS} by default. */
  readonly maxConcurrentReviews?: number;
}

/**
 * Authenticates and authorizes requests by TokenReview and SubjectAccessReview. Give it
 * a client of its own ({@link reviewClient}): on the operator's client, a flood of
 * made-up tokens spends the operator's budget.
 */
export class RequestAuthorizer {
  private readonly client: KubeClient;
  private readonly now: () => number;
  private readonly maxConcurrent: number;
  /** Allowed decisions, by key; apart from refusals so that a flood cannot evict them. */
  private readonly allowed = new Map<string, Cached>();
  /** Unauthenticated and forbidden decisions, by key. */
  private readonly refused = new Map<string, Cached>();
  /** Reviews in flight, by key: a second request with the same token waits for the first's. */
  private readonly inflight = new Map<string, Promise<AuthDecision>>();

  constructor(client: KubeClient, now: () => number = Date.now, opts: RequestAuthorizerOptions = {}) {
    this.client = client;
    this.now = now;
    this.maxConcurrent = opts.maxConcurrentReviews ?? MAX_CONCURRENT_REVIEWS;
  }

  /** Distinct reviews in flight now (tests, and the bound's proof). */
  get reviewsInFlight(): number {
    return this.inflight.size;
  }

  /**
   * Decides whether the bearer of `authorization` (the header's value) may `verb` `path`:
   * from the cache, from a review already in flight for the same token, or from a new
   * review if fewer than the bound are in flight ('overloaded' at once otherwise).
   */
  async authorize(authorization: string | undefined, path: string, verb = 'get'): Promise<AuthDecision> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (!token) return { kind: 'unauthenticated', message: 'a bearer token is required' };
    // Only a hash is kept: the cache must not hold live credentials.
    const key = createHash('sha256').update(`${verb} ${path} ${token}`).digest('hex');
    const hit = this.cached(key);
    if (hit) return hit;
    const running = this.inflight.get(key);
    if (running) return running;
    if (this.inflight.size >= this.maxConcurrent) {
      return {
        kind: 'overloaded',
        message: `${this.inflight.size} authorization reviews in flight: retry later`,
        retryAfterSeconds: OVERLOADED_RETRY_AFTER_SECONDS,
      };
    }
    const review = this.review(token, path, verb)
      .then((decision) => {
        if (decision.kind !== 'error') this.remember(key, decision);
        return decision;
      })
      .finally(() => this.inflight.delete(key));
    this.inflight.set(key, review);
    return review;
  }

  private cached(key: string): Reviewed | undefined {
    const now = this.now();
    for (const cache of [this.allowed, this.refused]) {
      const hit = cache.get(key);
      if (hit && hit.until > now) return hit.decision;
      if (hit) cache.delete(key);
    }
    return undefined;
  }

  private remember(key: string, decision: Reviewed): void {
    const cache = decision.kind === 'allowed' ? this.allowed : this.refused;
    // Re-inserted, so that insertion order is age order and the oldest goes first; out
    // of the other cache, so that a revoked grant is not found there.
    this.allowed.delete(key);
    this.refused.delete(key);
    cache.set(key, { decision, until: this.now() + AUTH_CACHE_TTL_MS });
    for (const k of cache.keys()) {
      if (cache.size <= AUTH_CACHE_MAX) break;
      cache.delete(k);
    }
  }

  private async review(
    token: string,
    path: string,
    verb: string,
  ): Promise<Reviewed | Extract<AuthDecision, { kind: 'error' }>> {
    const signal = AbortSignal.timeout(REVIEW_TIMEOUT_MS);
    try {
      const tr = await this.client.create<TokenReview>(
        {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          metadata: {},
          spec: { token },
        } as TokenReview,
        { signal },
      );
      const user = tr.status?.user;
      if (!tr.status?.authenticated || !user?.username) {
        return { kind: 'unauthenticated', message: tr.status?.error || 'the token was not accepted' };
      }
      const sar = await this.client.create<SubjectAccessReview>(
        {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          metadata: {},
          spec: {
            user: user.username,
            uid: user.uid,
            groups: user.groups,
            extra: user.extra,
            nonResourceAttributes: { path, verb },
          },
        } as SubjectAccessReview,
        { signal },
      );
      if (sar.status?.allowed) return { kind: 'allowed', user: user.username };
      return {
        kind: 'forbidden',
        user: user.username,
        message: `${user.username} may not ${verb} ${path}${sar.status?.reason ? `: ${sar.status.reason}` : ''}`,
      };
    } catch (err) {
      return {
        kind: 'error',
        message: `authorization failed: ${err instanceof Error ? err.message : String(err)}`,
      };
    }
  }
}
