/**
 * The decider's engine: what it serves (blocklists from the shard feed, the site's
 * configuration and allowlists from the mounted files, state in Valkey) and the three
 * things it answers (a verdict, a nonce, a checked proof-of-work), with no HTTP in it:
 * `http-api.ts` maps requests onto it, `main.ts` wires it to the cluster.
 *
 * Readiness: not ready until the shard feed has delivered its first complete view and
 * the site's configuration has been read once; from then on ready for good. Everything
 * that goes wrong later (a file or shard that does not read, a watch that went stale,
 * Valkey gone) keeps the decider serving what it has and is reported as degraded, never
 * as unready: an unready decider leaves the Service, and ext_authz then fails every
 * request by `failurePolicy`.
 */
import { randomBytes, randomFillSync } from 'node:crypto';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ListKind } from '../api/blocklist-source.ts';
import { CAPTCHA_VERIFY_URLS, CaptchaRejection, readCaptchaToken } from '../domain/decider/captcha.ts';
import { issueClearance, TOKEN_RANDOM_BYTES, verifyClearance } from '../domain/decider/clearance.ts';
import type { IpAddress } from '../domain/decider/client-address.ts';
import { formatAddress } from '../domain/decider/client-address.ts';
import { clientKey } from '../domain/decider/client-key.ts';
import type { DeciderSettings } from '../domain/decider/env.ts';
import {
  ChallengeRejection,
  checkSolution,
  mintNonce,
  NONCE_RANDOM_BYTES,
} from '../domain/decider/proof-of-work.ts';
import type { DeciderSiteConfig } from '../domain/decider/site-config-reader.ts';
import {
  challengeFor,
  type Decision,
  decide,
  stateWanted,
  type VerdictPolicy,
  VerdictReason,
} from '../domain/decider/verdict.ts';
import { verifyCaptcha } from './captcha-verifier.ts';
import { ListLoader, type LoaderEvent } from './list-loader.ts';
import type { DeciderMetrics } from './metrics.ts';
import type { ShardFeed } from './shard-feed.ts';
import type { ObservedConfigMap } from './shard-sets.ts';
import { POLL_INTERVAL_MS, SiteFiles } from './site-files.ts';
import type { StateStore } from './state-store.ts';

export interface DeciderOptions {
  readonly settings: Pick<
    DeciderSettings,
    'siteConfigPath' | 'allowlistsDir' | 'captchaSecret' | 'captchaVerifyUrl' | 'signingKeys'
  >;
  readonly feed: ShardFeed;
  readonly state: StateStore;
  readonly metrics: DeciderMetrics;
  readonly registry: Registry;
  readonly log: Logger;
  /** Default `POLL_INTERVAL_MS`. */
  readonly pollIntervalMs?: number;
}

/** What a challenge request gets. */
export type NonceAnswer =
  | { readonly ok: true; readonly nonce: string; readonly difficulty: number }
  | { readonly ok: false; readonly status: 503; readonly error: string };

/** What an answer to a challenge gets. */
export type SolutionAnswer =
  | { readonly ok: true; readonly token: string; readonly maxAge: number }
  | {
      readonly ok: false;
      readonly status: 400 | 403 | 503;
      readonly error: string;
      readonly message: string;
    };

export interface Readiness {
  readonly ready: boolean;
  /** One line per part: `[+]name ok: ...`, `[!]name degraded: ...`, `[-]name failed: ...`. */
  readonly lines: readonly string[];
  readonly degraded: readonly string[];
}

/** Nonces' random bytes drawn at once: 4 KB. */
const NONCE_POOL = 256;
/** How long a client's challenge page keeps its nonce (`nonceNow`). */
const NONCE_REUSE_MS = 5000;
/** Clients whose recent nonce is kept; past it the memory starts over (a few MB at most). */
const MAX_RECENT_NONCES = 50_000;

/** ListedObserved lines logged per second at most; the metric counts every one. */
const OBSERVED_LOG_PER_SECOND = 20;

/** How long a start waits for the key Valkey shares before serving without it. */
export const SIGNING_KEY_WAIT_MS = 3_000;

export class Decider {
  readonly metrics: DeciderMetrics;
  readonly registry: Registry;
  readonly log: Logger;
  readonly #feed: ShardFeed;
  readonly #state: StateStore;
  readonly #lists = new ListLoader((event) => this.#shardsApplied(event));
  readonly #files: SiteFiles;
  readonly #pollIntervalMs: number;
  readonly #captcha: Pick<DeciderSettings, 'captchaSecret' | 'captchaVerifyUrl'>;
  /** From the Secret: used as they are. Empty: the key Valkey shares, in `#keys`. */
  readonly #configuredKeys: readonly Buffer[];
  /**
   * The keys last known, for the verdict's synchronous clearance check: the configured
   * ones, or the last key Valkey gave (kept while Valkey is away, so a clearance stays
   * valid through an outage).
   */
  #keys: readonly Buffer[] | undefined;
  #poller: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #observedLogged = { second: 0, count: 0 };

  constructor(options: DeciderOptions) {
    this.#feed = options.feed;
    this.#state = options.state;
    this.metrics = options.metrics;
    this.registry = options.registry;
    this.log = options.log;
    this.#files = new SiteFiles(options.settings.siteConfigPath, options.settings.allowlistsDir);
    this.#pollIntervalMs = options.pollIntervalMs ?? POLL_INTERVAL_MS;
    this.#captcha = options.settings;
    this.#configuredKeys = options.settings.signingKeys ?? [];
    if (this.#configuredKeys.length > 0) this.#keys = this.#configuredKeys;
  }

  /**
   * The signing keys, the first signing: the configured ones, else the key Valkey shares
   * (read again now and then, and the last one kept while Valkey does not answer).
   * Undefined only when no Secret gives keys and Valkey never answered.
   */
  async signingKeys(): Promise<readonly Buffer[] | undefined> {
    if (this.#configuredKeys.length > 0) return this.#configuredKeys;
    const key = await this.#state.signingKey();
    if (key !== undefined) this.#keys = [key];
    return this.#keys;
  }

  /** Reads the files once, then polls them; starts the feed. Resolves once both have begun. */
  async start(): Promise<void> {
    await this.pollFiles();
    this.#poller = setInterval(() => void this.pollFiles(), this.#pollIntervalMs);
    this.#poller.unref();
    this.#feed.start((configMaps) => this.#applyShards(configMaps));
    // The key first, within a bound: a verdict checks a clearance with the key already
    // known, so a decider that served before reading it challenged clients that a
    // clearance had passed (after every restart, until Valkey answered; CI under load
    // caught it). A Valkey that does not answer holds the start no longer than the bound:
    // listed clients are then challenged until it does, as before. The connection first:
    // a read sent before it is ready fails at once (CI under load caught a start that
    // served without the key because its one read came a moment too early).
    await Promise.race([
      this.#state
        .connected()
        .then(() => this.signingKeys())
        .catch(() => undefined),
      new Promise<void>((resolve) => setTimeout(resolve, SIGNING_KEY_WAIT_MS).unref()),
    ]);
  }

  async close(): Promise<void> {
    if (this.#poller) clearInterval(this.#poller);
    await this.#polling;
    await this.#feed.stop();
    await this.#lists.close();
    await this.#state.close();
  }

  /** The configuration applied now, if one was ever read. */
  get config(): DeciderSiteConfig | undefined {
    return this.#files.config;
  }

  get ready(): boolean {
    return this.#lists.applied && this.#files.config !== undefined;
  }

  /** One poll of the mounted files (the interval calls it; a test may too). */
  pollFiles(): Promise<void> {
    this.#polling ??= this.#files
      .poll()
      .then((outcome) => {
        for (const p of outcome.newProblems) {
          this.metrics.reloadFailures.inc({ source: p.source });
          this.log.error({ source: p.source }, p.message);
        }
        if (outcome.configChanged)
          this.log.info({ config: this.#files.config }, 'site configuration applied');
        if (outcome.allowlistsChanged) {
          this.log.info({ allowlists: Object.fromEntries(this.#files.allowlists) }, 'allowlists applied');
        }
      })
      .catch((err: unknown) => this.log.error({ err }, 'polling the mounted files failed'))
      .finally(() => {
        this.#polling = undefined;
      });
    return this.#polling;
  }

  /**
   * Resolves once every view the feed delivered so far is served (or failed): views are
   * applied off this thread (`ListLoader`), a moment after the feed delivers them.
   */
  shardsSettled(): Promise<void> {
    return this.#lists.settled();
  }

  #applyShards(configMaps: readonly ObservedConfigMap[]): void {
    this.#lists.apply(configMaps);
  }

  #shardsApplied(event: LoaderEvent): void {
    if (event.kind === 'failed') {
      // A bug, not a bad shard (those are reported, not thrown): keep serving the table we have.
      this.metrics.reloadFailures.inc({ source: 'shards' });
      this.log.error(
        { err: event.error },
        'applying the shard ConfigMaps failed; the previous lists stay served',
      );
      return;
    }
    const { outcome } = event;
    for (const p of outcome.shardProblems)
      this.log.warn({ configMap: p.configMap, reason: p.reason }, p.message);
    for (const p of outcome.parseProblems) {
      this.metrics.reloadFailures.inc({ source: 'shards' });
      this.log.error(p);
    }
    if (outcome.rebuilt) {
      this.metrics.tableBuilds.inc();
      this.metrics.tableBuildSeconds.observe(outcome.buildMs / 1000);
      const served = this.#lists.served;
      for (const kind of Object.values(ListKind)) {
        this.metrics.lists.set({ kind }, served.filter((l) => l.kind === kind).length);
      }
      this.log.info(
        { lists: served.map((l) => `${l.name}@${l.fingerprint.slice(0, 12)}`), buildMs: outcome.buildMs },
        'lists served',
      );
    }
  }

  /**
   * The verdict for `address`, presenting clearance `token` (from the cookie), if any. A
   * promise only when Valkey must be asked (a listed client the posture challenges): most
   * requests are unlisted, and answering them without a turn of the microtask queue is a
   * measurable share of a verdict's cost.
   */
  verdict(address: IpAddress, token: string | undefined): Decision | Promise<Decision> {
    const config = this.#files.config;
    if (config === undefined) throw new Error('the decider is not ready: no site configuration was read');
    const policy = this.#policyOf(config);
    const base = {
      allowlisted: this.#files.isAllowlisted(address),
      lists: this.#lists.lookup(address),
      policy,
    };
    if (!stateWanted(base))
      return this.#decided(address, decide({ ...base, state: { kind: 'notRead' } }), policy);
    const client = clientKey(address);
    // The clearance is checked by its signature, with no store asked: it holds while Valkey is away.
    const keys = this.#keys;
    if (token !== undefined && keys !== undefined) {
      if (verifyClearance(keys, client, token, Math.floor(Date.now() / 1000))) {
        return this.#decided(address, decide({ ...base, state: { kind: 'cleared' } }), policy);
      }
    }
    const state = this.#state.countChallenge(client);
    if (state instanceof Promise) {
      return state.then((read) => this.#decided(address, decide({ ...base, state: read }), policy));
    }
    return this.#decided(address, decide({ ...base, state }), policy);
  }

  /** The policy of the configuration read last, made once per configuration rather than per request. */
  #policy: { readonly config: DeciderSiteConfig; readonly policy: VerdictPolicy } | undefined;

  #policyOf(config: DeciderSiteConfig): VerdictPolicy {
    if (this.#policy?.config !== config) this.#policy = { config, policy: policyOf(config) };
    return this.#policy.policy;
  }

  #decided(address: IpAddress, decision: Decision, policy: VerdictPolicy): Decision {
    this.metrics.countVerdict(decision.verdict, decision.reason);
    if (decision.reason === VerdictReason.ListedObserved) this.#logObserved(address, decision, policy);
    return decision;
  }

  #logObserved(address: IpAddress, decision: Decision, policy: VerdictPolicy): void {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.#observedLogged.second) this.#observedLogged = { second, count: 0 };
    if (++this.#observedLogged.count > OBSERVED_LOG_PER_SECOND) return;
    const challenge = challengeFor({ ...policy, posture: 'Challenge' });
    this.log.info(
      {
        client: clientKey(address),
        list: decision.list,
        underChallenge: challenge === 'none' ? 'pass' : challenge,
      },
      'listed client passed (posture Observe)',
    );
  }

  /**
   * Random bytes for nonces, drawn from a pool refilled `NONCE_POOL` nonces at a time: one
   * `randomBytes` call per challenge page showed in the bench, where a quarter of the
   * requests are listed clients each sent a fresh page.
   */
  readonly #randomPool = Buffer.alloc(NONCE_RANDOM_BYTES * NONCE_POOL);
  #randomAt = this.#randomPool.length;

  #nonceRandom(): Uint8Array {
    if (this.#randomAt >= this.#randomPool.length) {
      randomFillSync(this.#randomPool);
      this.#randomAt = 0;
    }
    const bytes = this.#randomPool.subarray(this.#randomAt, this.#randomAt + NONCE_RANDOM_BYTES);
    this.#randomAt += NONCE_RANDOM_BYTES;
    return bytes;
  }

  /**
   * `nonce` without a promise when the signing key is known (always, once read): the
   * challenge page is the answer to every listed request without a clearance, and a turn
   * of the microtask queue is a measurable share of it. Undefined: ask `nonce`.
   */
  nonceNow(address: IpAddress, extraBits = 0): NonceAnswer | undefined {
    const config = this.#files.config;
    const key = this.#keys?.[0];
    if (config === undefined || key === undefined) return undefined;
    const difficulty = config.difficulty + extraBits;
    // One client asking again within NONCE_REUSE_MS gets the nonce it was given: a page
    // with many assets asks many times before the cookie is set, and a flood from one
    // address should not cost an HMAC a request (measured: 30 µs, most of a page). Still
    // one nonce, one clearance; it expires NONCE_TTL_SECONDS after it was made.
    const cacheKey = `${clientKey(address)} ${difficulty}`;
    const now = Date.now();
    const cached = this.#recentNonces.get(cacheKey);
    if (cached !== undefined && cached.key === key && now - cached.at < NONCE_REUSE_MS) return cached.answer;
    const answer = this.#mint(key, address, difficulty);
    if (this.#recentNonces.size >= MAX_RECENT_NONCES) this.#recentNonces.clear();
    this.#recentNonces.set(cacheKey, { key, at: now, answer });
    return answer;
  }

  readonly #recentNonces = new Map<string, { key: Buffer; at: number; answer: NonceAnswer }>();

  #mint(key: Buffer, address: IpAddress, difficulty: number): NonceAnswer {
    const nonce = mintNonce({
      key,
      client: clientKey(address),
      difficulty,
      now: Math.floor(Date.now() / 1000),
      random: this.#nonceRandom(),
    });
    return { ok: true, nonce, difficulty };
  }

  /** A nonce for the client at `address`, asking `extraBits` more than the site's difficulty. */
  async nonce(address: IpAddress, extraBits = 0): Promise<NonceAnswer> {
    const config = this.#files.config;
    if (config === undefined) return { ok: false, status: 503, error: 'not ready' };
    const key = (await this.signingKeys())?.[0];
    if (key === undefined) {
      return {
        ok: false,
        status: 503,
        error: 'no signing key: no Secret gives one and Valkey never answered',
      };
    }
    return this.#mint(key, address, config.difficulty + extraBits);
  }

  /** Checks an answer to a nonce; a clearance when it is right. */
  async solve(address: IpAddress, nonce: unknown, counter: unknown): Promise<SolutionAnswer> {
    const config = this.#files.config;
    if (config === undefined) return { ok: false, status: 503, error: 'NotReady', message: 'not ready' };
    const keys = await this.signingKeys();
    if (keys === undefined || keys.length === 0) {
      return {
        ok: false,
        status: 503,
        error: 'StateUnavailable',
        message: 'no signing key: no Secret gives one and Valkey never answered',
      };
    }
    const client = clientKey(address);
    const now = Math.floor(Date.now() / 1000);
    // A nonce made under a key kept for rotation is still answered.
    let check = checkSolution({ key: keys[0]!, client, nonce, counter, now, difficulty: config.difficulty });
    for (const key of keys.slice(1)) {
      if (check.ok || check.reason !== ChallengeRejection.ForgedNonce) break;
      check = checkSolution({ key, client, nonce, counter, now, difficulty: config.difficulty });
    }
    if (!check.ok) {
      this.metrics.challengeAnswers.inc({ outcome: check.reason });
      const malformed =
        check.reason === ChallengeRejection.MalformedNonce ||
        check.reason === ChallengeRejection.MalformedCounter;
      return { ok: false, status: malformed ? 400 : 403, error: check.reason, message: check.message };
    }
    // Replay protection, while Valkey answers. Without it a solved nonce could be answered
    // again until it expires (NONCE_TTL_SECONDS), from the same client only (the nonce is
    // bound to it): more clearances for one address, which one clearance already passes.
    const claim = await this.#state.claimNonce(check.nonceId, check.expires - now + 1);
    if (claim === 'unavailable') this.metrics.challengeAnswers.inc({ outcome: 'ReplayUnchecked' });
    if (claim === 'used') {
      this.metrics.challengeAnswers.inc({ outcome: ChallengeRejection.NonceUsed });
      return {
        ok: false,
        status: 403,
        error: ChallengeRejection.NonceUsed,
        message: 'this nonce was answered already: ask a new one',
      };
    }
    this.metrics.challengeAnswers.inc({ outcome: 'Cleared' });
    return {
      ok: true,
      token: this.#clearance(keys[0]!, client, config.clearanceSeconds),
      maxAge: config.clearanceSeconds,
    };
  }

  #clearance(key: Buffer, client: string, seconds: number): string {
    return issueClearance({
      key,
      client,
      now: Math.floor(Date.now() / 1000),
      seconds,
      random: randomBytes(TOKEN_RANDOM_BYTES),
    });
  }

  /**
   * Checks a captcha answer with the provider; the same clearance as a proof-of-work when
   * the provider says it is good. The provider is asked with the client's address as
   * `remoteip`, as the providers recommend.
   */
  async solveCaptcha(address: IpAddress, tokenValue: unknown): Promise<SolutionAnswer> {
    const config = this.#files.config;
    if (config === undefined) return { ok: false, status: 503, error: 'NotReady', message: 'not ready' };
    const refuse = (status: 400 | 403 | 503, error: CaptchaRejection, message: string): SolutionAnswer => {
      this.metrics.challengeAnswers.inc({ outcome: error });
      return { ok: false, status, error, message };
    };
    if (config.captcha === undefined) {
      return refuse(403, CaptchaRejection.CaptchaNotConfigured, 'this site has no captcha');
    }
    const token = readCaptchaToken(tokenValue);
    if (token === undefined) {
      return refuse(400, CaptchaRejection.MalformedToken, "token: the widget's answer, a non-empty string");
    }
    const secret = this.#captcha.captchaSecret;
    if (secret === undefined) {
      this.log.error('a captcha answer came, but EXOLEDGE_CAPTCHA_SECRET is not set: nothing can check it');
      return refuse(503, CaptchaRejection.CaptchaUnavailable, 'the captcha cannot be checked now');
    }
    const check = await verifyCaptcha({
      url: this.#captcha.captchaVerifyUrl ?? CAPTCHA_VERIFY_URLS[config.captcha.provider],
      secret,
      token,
      remoteIp: formatAddress(address),
    });
    switch (check.kind) {
      case 'passed':
        break;
      case 'failed':
        this.log.info(
          { client: clientKey(address), codes: check.codes },
          'captcha answer refused by the provider',
        );
        return refuse(403, CaptchaRejection.CaptchaFailed, 'the captcha was not solved: try again');
      case 'unreadable':
      case 'unreachable':
        this.log.warn(
          {
            provider: config.captcha.provider,
            problem: check.kind === 'unreachable' ? check.message : 'not its JSON',
          },
          'the captcha provider did not answer',
        );
        return refuse(503, CaptchaRejection.CaptchaUnavailable, 'the captcha cannot be checked now');
      default:
        return check satisfies never;
    }
    const key = (await this.signingKeys())?.[0];
    if (key === undefined) {
      return {
        ok: false,
        status: 503,
        error: 'StateUnavailable',
        message: 'no signing key: no Secret gives one and Valkey never answered',
      };
    }
    this.metrics.challengeAnswers.inc({ outcome: 'Cleared' });
    return {
      ok: true,
      token: this.#clearance(key, clientKey(address), config.clearanceSeconds),
      maxAge: config.clearanceSeconds,
    };
  }

  readiness(): Readiness {
    const lines: string[] = [];
    const degraded: string[] = [];
    const feed = this.#feed.health();
    if (!this.#lists.applied) {
      lines.push(`[-]shards failed: not read yet${feed.lastError ? ` (last error: ${feed.lastError})` : ''}`);
    } else {
      const served = this.#lists.served;
      const names = served.map((l) => `${l.name} (${l.kind}, ${l.entries} entries)`).join(', ');
      lines.push(`[+]shards ok: ${served.length} lists served${names ? `: ${names}` : ''}`);
      const last = this.#lists.lastOutcome;
      if (feed.stale)
        degraded.push(`shards: the watch is stale${feed.lastError ? ` (${feed.lastError})` : ''}`);
      for (const p of last?.shardProblems ?? []) degraded.push(`shards: ${p.message} (${p.reason})`);
      for (const p of last?.parseProblems ?? []) degraded.push(`shards: ${p}`);
    }
    const config = this.#files.config;
    lines.push(
      config === undefined
        ? '[-]site-config failed: never read'
        : `[+]site-config ok: posture ${config.posture}, challenge ${config.challenge}, ` +
            `captcha ${config.captcha ? config.captcha.provider : 'none'}`,
    );
    const allowlists = [...this.#files.allowlists].map(([n, e]) => `${n} (${e} entries)`).join(', ');
    lines.push(`[+]allowlists ok: ${allowlists || 'none'}`);
    for (const note of this.#files.notes()) lines.push(`[+]allowlists note: ${note}`);
    for (const p of this.#files.problems()) degraded.push(p);
    const valkey = this.#state.degraded();
    lines.push(valkey === undefined ? '[+]valkey ok' : `[!]valkey degraded: ${valkey}`);
    if (valkey !== undefined) degraded.push(valkey);
    return { ready: this.ready, lines, degraded };
  }
}

export function policyOf(config: DeciderSiteConfig): VerdictPolicy {
  return {
    posture: config.posture,
    captcha: config.captcha !== undefined,
    challenge: config.challenge,
    blocklists: config.blocklists,
  };
}
