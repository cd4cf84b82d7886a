/**
 * The docs' one table of what each switch and list class does has examples; each is
 * checked here against the decider's own path: the spec the row describes, written to the
 * site configuration as the operator writes it (`siteConfigText`), read back as the
 * decider reads it (`readSiteConfig`, `policyOf`), and the verdict `decide` gives a fresh
 * client (no clearance, first challenge). The expected verdict and reason are the docs'.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ListKind } from '../src/api/blocklist-source.ts';
import { CaptchaProvider, type EdgeSiteSpec, Posture } from '../src/api/edge-site.ts';
import { policyOf } from '../src/decider/decider.ts';
import { readSiteConfig } from '../src/domain/decider/site-config-reader.ts';
import { decide, type ListHit } from '../src/domain/decider/verdict.ts';
import { siteConfigText } from '../src/domain/edge-site/site-config.ts';

const docs = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'exoledge.md'), 'utf8');

/** The rows between the markers, as trimmed cells (header and rule skipped). */
function examples(): string[][] {
  const start = docs.indexOf('<!-- verdict-examples -->');
  const end = docs.indexOf('<!-- end verdict-examples -->');
  assert.ok(start >= 0 && end > start, 'docs/exoledge.md has no verdict examples');
  const rows = docs
    .slice(start, end)
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .map((l) =>
      l
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim().replace(/^`|`$/g, '')),
    );
  return rows.slice(2);
}

/** The lists the examples name, and their class. */
const LISTS: Readonly<Record<string, ListKind>> = {
  proxies: ListKind.Presumed,
  tor: ListKind.Presumed,
  scanners: ListKind.Certain,
};

function specOf(posture: string, captcha: string, challenge: string, blocklists: string): EdgeSiteSpec {
  assert.ok(Object.values(Posture).includes(posture as Posture), posture);
  assert.ok(['yes', 'no'].includes(captcha) && ['on', 'off'].includes(challenge), `${captcha} ${challenge}`);
  const selection =
    blocklists === 'absent'
      ? undefined
      : blocklists
          .replace(/^\[|\]$/g, '')
          .split(',')
          .map((n) => n.trim())
          .filter((n) => n !== '');
  return {
    domains: ['shop.example.com'],
    upstream: { name: 'shop', port: 80 },
    tls: { issuerRef: { name: 'letsencrypt' } },
    posture: posture as Posture,
    ...(captcha === 'yes'
      ? {
          captcha: {
            provider: CaptchaProvider.Turnstile,
            siteKey: '0x4AAAAAAAB_example',
            secretRef: { name: 'turnstile' },
          },
        }
      : {}),
    security: {
      challenge: challenge === 'on',
      ...(selection === undefined ? {} : { blocklists: selection }),
    },
  };
}

describe('docs: what each switch and each list class does', () => {
  const rows = examples();

  it('has examples of every posture, both switch positions, [] and a Certain list', () => {
    assert.ok(rows.length >= 10, `${rows.length} examples`);
    for (const p of Object.values(Posture))
      assert.ok(
        rows.some((r) => r[0] === p),
        p,
      );
    assert.ok(rows.some((r) => r[3] === '[]' && r[4] === 'scanners'));
    assert.ok(rows.some((r) => r[1] === 'yes' && r[2] === 'off'));
  });

  it("gives each example's verdict and reason, as the decider reads the operator's configuration", () => {
    for (const row of rows) {
      const [posture, captcha, challenge, blocklists, client, verdict, reason] = row as [
        string,
        string,
        string,
        string,
        string,
        string,
        string,
      ];
      const read = readSiteConfig(siteConfigText(specOf(posture, captcha, challenge, blocklists)));
      assert.ok(read.ok, JSON.stringify(read));
      const lists: ListHit[] = client === 'no list' ? [] : [{ name: client, kind: LISTS[client]! }];
      assert.ok(client === 'no list' || LISTS[client] !== undefined, client);
      const decision = decide({
        allowlisted: false,
        lists,
        policy: policyOf(read.config),
        state: { kind: 'challenged', count: 1 },
      });
      assert.deepEqual([decision.verdict, decision.reason], [verdict, reason], row.join(' | '));
    }
  });
});
