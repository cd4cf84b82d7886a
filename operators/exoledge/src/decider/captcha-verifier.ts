/**
 * Asks the captcha provider whether an answer is good (`domain/decider/captcha.ts` builds
 * the request and reads the answer). One POST, no retry: the browser can answer again,
 * and a retry would hold the request open past the challenge page's patience.
 */
import { readSiteverify, type SiteverifyResult, siteverifyForm } from '../domain/decider/captcha.ts';

/** The provider answers in well under a second; past this the answer is not waited for. */
export const CAPTCHA_VERIFY_TIMEOUT_MS = 3000;

export type CaptchaCheck = SiteverifyResult | { readonly kind: 'unreachable'; readonly message: string };

export async function verifyCaptcha(options: {
  readonly url: string;
  readonly secret: string;
  readonly token: string;
  readonly remoteIp: string;
  readonly timeoutMs?: number;
}): Promise<CaptchaCheck> {
  try {
    const res = await fetch(options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: siteverifyForm(options.secret, options.token, options.remoteIp),
      signal: AbortSignal.timeout(options.timeoutMs ?? CAPTCHA_VERIFY_TIMEOUT_MS),
      redirect: 'error',
    });
    if (!res.ok) {
      await res.body?.cancel();
      return { kind: 'unreachable', message: `the provider answered ${res.status}` };
    }
    return readSiteverify(await res.json().catch(() => undefined));
  } catch (err) {
    return { kind: 'unreachable', message: err instanceof Error ? err.message : String(err) };
  }
}
