/**
 * The challenge as the visitor sees it, served by the decider itself through ext_authz's
 * denied response (no Wasm filter): Envoy sends a denied check's status, body and the
 * headers `DENIED_CLIENT_HEADERS` to the client as they are. Pure: text in, text out.
 *
 * The round trip, every step a request on the site's route, so every step reaches the
 * decider through ext_authz:
 * 1. a listed visitor without a valid clearance asks for `/some/page`; the decider denies
 *    with `CHALLENGE_STATUS` and a page carrying a nonce and its difficulty;
 * 2. the page's script finds the counter (SHA-256 of nonce + counter with `difficulty`
 *    leading zero bits) and navigates to
 *    `GET /.exoledge/challenge?nonce=..&counter=..&to=/some/page` (a GET with a query:
 *    ext_authz forwards no body unless told to);
 * 3. the decider checks the answer in that check, and denies it with 303 `Location: to`
 *    and the clearance cookie (`Set-Cookie`): the browser stores it and follows;
 * 4. `/some/page` again, with the cookie: the verdict is pass (Cleared).
 * A captcha is the same with the provider's widget in the page and
 * `/.exoledge/captcha?token=..&to=..` as the answer.
 */
import { CaptchaProvider } from '../../api/edge-site.ts';

/** Where the page sends a proof-of-work answer: reserved on every site. */
export const CHALLENGE_ANSWER_PATH = '/.exoledge/challenge';
/** Where the page sends a captcha answer. */
export const CAPTCHA_ANSWER_PATH = '/.exoledge/captcha';
/**
 * The status of a challenge page: 403, as a denial must be non-200 for ext_authz, and a
 * cache or a crawler must not take the page for the resource.
 */
export const CHALLENGE_STATUS = 403;
/** A right answer: see-other to where the visitor was going, cookie set. */
export const CLEARED_STATUS = 303;
/**
 * The headers of a denied check Envoy passes to the client (`allowed_client_headers`):
 * what the page, the redirect and the cookie need, nothing that names a list or reason.
 */
export const DENIED_CLIENT_HEADERS: readonly string[] = [
  'content-type',
  'cache-control',
  'set-cookie',
  'location',
  'retry-after',
];

/**
 * A local path to send the visitor back to: `to` when it is one (starts with a single
 * `/`, no backslash, no control character), else `/`. Never another site: an open
 * redirect on a challenge would lend the site's name to anyone's link.
 */
export function returnPath(to: string | null | undefined): string {
  if (typeof to !== 'string' || to.length > 2048) return '/';
  if (!to.startsWith('/') || to.startsWith('//') || to.includes('\\')) return '/';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(to)) return '/';
  return to;
}

/** Text safe inside a `<script>` as a JS string literal. */
function scriptString(text: string): string {
  return JSON.stringify(text).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

/** Text safe in an HTML attribute or element. */
function html(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

const HEAD = `<!doctype html><html><head><meta charset="utf-8"><meta name="robots" content="noindex"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Checking your browser</title></head><body>`;

export interface PowPageInput {
  readonly nonce: string;
  readonly difficulty: number;
  /** Where the visitor was going (`returnPath` applies). */
  readonly to: string;
  /** Why a previous answer was refused, if one was. */
  readonly message?: string;
}

/**
 * The proof-of-work page: the nonce and the difficulty as data attributes of `<main>`
 * (what a non-browser client reads), and a script that solves it with WebCrypto.
 */
export function powPage(input: PowPageInput): string {
  const to = returnPath(input.to);
  return `${HEAD}<main id="exoledge-challenge" data-nonce="${html(input.nonce)}" data-difficulty="${input.difficulty}" data-answer="${CHALLENGE_ANSWER_PATH}" data-to="${html(to)}"><p>Checking your browser before going on. This takes a few seconds.</p>${input.message ? `<p>${html(input.message)}</p>` : ''}<noscript><p>This check needs JavaScript.</p></noscript></main><script>
(async () => {
  const nonce = ${scriptString(input.nonce)}, difficulty = ${input.difficulty}, to = ${scriptString(to)};
  const enc = new TextEncoder();
  const zeros = (d) => { let n = 0; for (const b of d) { if (b === 0) { n += 8; continue; } return n + Math.clz32(b) - 24; } return n; };
  for (let counter = 0; ; counter++) {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', enc.encode(nonce + counter)));
    if (zeros(digest) >= difficulty) {
      location.replace(${scriptString(CHALLENGE_ANSWER_PATH)} + '?nonce=' + encodeURIComponent(nonce) + '&counter=' + counter + '&to=' + encodeURIComponent(to));
      return;
    }
  }
})();
</script></body></html>
`;
}

/** The widget's script and element class of each provider. */
const WIDGETS: Readonly<Record<CaptchaProvider, { readonly script: string; readonly className: string }>> = {
  [CaptchaProvider.Turnstile]: {
    script: 'https://challenges.cloudflare.com/turnstile/v0/api.js',
    className: 'cf-turnstile',
  },
  [CaptchaProvider.HCaptcha]: { script: 'https://js.hcaptcha.com/1/api.js', className: 'h-captcha' },
  [CaptchaProvider.ReCaptcha]: {
    script: 'https://www.google.com/recaptcha/api.js',
    className: 'g-recaptcha',
  },
};

export interface CaptchaPageInput {
  readonly provider: CaptchaProvider;
  readonly siteKey: string;
  readonly to: string;
  readonly message?: string;
}

/** The captcha page: the provider's widget, whose callback sends the token to `CAPTCHA_ANSWER_PATH`. */
export function captchaPage(input: CaptchaPageInput): string {
  const to = returnPath(input.to);
  const widget = WIDGETS[input.provider];
  return `${HEAD}<main id="exoledge-captcha" data-to="${html(to)}"><p>Please confirm you are a person.</p>${input.message ? `<p>${html(input.message)}</p>` : ''}<div class="${widget.className}" data-sitekey="${html(input.siteKey)}" data-callback="exoledgeSolved"></div></main><script>
function exoledgeSolved(token) {
  location.replace(${scriptString(CAPTCHA_ANSWER_PATH)} + '?token=' + encodeURIComponent(token) + '&to=' + encodeURIComponent(${scriptString(to)}));
}
</script><script src="${widget.script}" async defer></script></body></html>
`;
}
