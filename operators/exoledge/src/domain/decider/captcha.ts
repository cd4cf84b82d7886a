/**
 * The captcha: the page the challenge filter serves embeds the provider's widget with the
 * site key; the browser posts the widget's answer (a token) to the decider, which asks the
 * provider whether it is good, with the secret key, and issues the same clearance a
 * proof-of-work buys. The three providers share one protocol ("siteverify"): a form POST
 * of `secret`, `response` and `remoteip`, answered by JSON whose `success` says it all.
 * Pure: the request to send and the reading of the answer; `captcha-verifier.ts` sends it.
 */
import { CaptchaProvider } from '../../api/edge-site.ts';

/** Where each provider verifies an answer (their documented endpoints). */
export const CAPTCHA_VERIFY_URLS: Readonly<Record<CaptchaProvider, string>> = {
  [CaptchaProvider.Turnstile]: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
  [CaptchaProvider.HCaptcha]: 'https://api.hcaptcha.com/siteverify',
  [CaptchaProvider.ReCaptcha]: 'https://www.google.com/recaptcha/api/siteverify',
};

/**
 * The longest answer token accepted. Turnstile documents 2,048 characters; the others are
 * shorter. A longer one is refused before any call, so a client cannot make the decider
 * post megabytes to the provider.
 */
export const MAX_CAPTCHA_TOKEN_LENGTH = 2048;

/** Why an answer to a captcha got no clearance. */
export const CaptchaRejection = {
  /** The body has no `token` string of 1 to `MAX_CAPTCHA_TOKEN_LENGTH` characters (400). */
  MalformedToken: 'MalformedToken',
  /** The provider said the answer is not good: wrong, expired, or used already (403). */
  CaptchaFailed: 'CaptchaFailed',
  /** The site has no captcha: nothing to answer (404). */
  CaptchaNotConfigured: 'CaptchaNotConfigured',
  /**
   * The answer could not be checked: no secret key in the decider's environment, the
   * provider unreachable, slow or answering something else than its JSON (503). Never a
   * clearance on doubt: a captcha that cannot be checked is not passed.
   */
  CaptchaUnavailable: 'CaptchaUnavailable',
} as const;
export type CaptchaRejection = (typeof CaptchaRejection)[keyof typeof CaptchaRejection];

/** A token of the accepted shape, or undefined. */
export function readCaptchaToken(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_CAPTCHA_TOKEN_LENGTH
    ? value
    : undefined;
}

/** The form the provider expects, `application/x-www-form-urlencoded`. */
export function siteverifyForm(secret: string, token: string, remoteIp: string): string {
  return new URLSearchParams({ secret, response: token, remoteip: remoteIp }).toString();
}

/** What the provider's answer says. */
export type SiteverifyResult =
  | { readonly kind: 'passed' }
  | { readonly kind: 'failed'; readonly codes: readonly string[] }
  /** Not the provider's JSON: treated as the provider being unavailable. */
  | { readonly kind: 'unreadable' };

/**
 * Reads the provider's JSON. Only `success: true` (the boolean) passes; anything else
 * with a boolean `success` fails, with the provider's `error-codes` for the log.
 */
export function readSiteverify(body: unknown): SiteverifyResult {
  if (typeof body !== 'object' || body === null) return { kind: 'unreadable' };
  const doc = body as Record<string, unknown>;
  if (doc.success === true) return { kind: 'passed' };
  if (doc.success !== false) return { kind: 'unreadable' };
  const codes = Array.isArray(doc['error-codes'])
    ? doc['error-codes'].filter((c): c is string => typeof c === 'string')
    : [];
  return { kind: 'failed', codes };
}
