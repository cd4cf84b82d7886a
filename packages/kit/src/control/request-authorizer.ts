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
 * Errors (apiserver unreachable) are not cached, and answer 500, not 403: a scraper
 * should retry, not conclude it is forbidden.
 */
import { createHash } from 'node:crypto';
import type { KubeClient } from '../client/client.ts';
import type { KubeObject } from '../client/types.ts';

/** How long one decision is reused. */
export const AUTH_CACHE_TTL_MS = 10_000;
/** Decisions remembered at most; the oldest is forgotten first. */
export const AUTH_CACHE_MAX = 1024;
/** The bound on each review: a probe or scrape must not hang on a slow apiserver. */
export const REVIEW_TIMEOUT_MS = 5_000;

/** The outcome of authorizing one request, with the HTTP status it maps to. */
export type AuthDecision =
  /** The token names a user RBAC allows: 200. */
  | { readonly kind: 'allowed'; readonly user: string }
  /** No token, or one the apiserver does not accept: 401. */
  | { readonly kind: 'unauthenticated'; readonly message: string }
  /** A valid token whose user may not do this: 403. */
  | { readonly kind: 'forbidden'; readonly user: string; readonly message: string }
  /** The reviews themselves failed: 500, not cached. */
  | { readonly kind: 'error'; readonly message: string };

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

export class RequestAuthorizer {
  private readonly client: KubeClient;
  private readonly now: () => number;
  private readonly cache = new Map<string, { decision: AuthDecision; until: number }>();

  constructor(client: KubeClient, now: () => number = Date.now) {
    this.client = client;
    this.now = now;
  }

  /** Decides whether the bearer of `authorization` (the header's value) may `verb` `path`. */
  async authorize(authorization: string | undefined, path: string, verb = 'get'): Promise<AuthDecision> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (!token) return { kind: 'unauthenticated', message: 'a bearer token is required' };
    const key = createHash('sha256').update(`${verb} ${path} ${token}`).digest('hex');
    const hit = this.cache.get(key);
    if (hit && hit.until > this.now()) return hit.decision;
    const decision = await this.review(token, path, verb);
    if (decision.kind !== 'error') {
      this.cache.delete(key);
      this.cache.set(key, { decision, until: this.now() + AUTH_CACHE_TTL_MS });
      for (const k of this.cache.keys()) {
        if (this.cache.size <= AUTH_CACHE_MAX) break;
        this.cache.delete(k);
      }
    }
    return decision;
  }

  private async review(token: string, path: string, verb: string): Promise<AuthDecision> {
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
