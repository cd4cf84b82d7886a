/**
 * What the decider is given, read strictly: its site's `config.json` as the operator
 * writes it (every spec the CRD allows reads back to what it asks, with the product
 * defaults spelled out here by hand), its environment, and its allowlists.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CaptchaProvider, type EdgeSiteSpec, Posture } from '../src/api/edge-site.ts';
import { readAllowlist } from '../src/domain/decider/allowlist.ts';
import { readDeciderEnv, readListen } from '../src/domain/decider/env.ts';
import { durationSeconds, readSiteConfig } from '../src/domain/decider/site-config-reader.ts';
import { siteConfigText } from '../src/domain/edge-site/site-config.ts';

const name = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?$/);
const clearance = fc
  .tuple(fc.integer({ min: 0, max: 167 }), fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 59 }))
  .filter(([h, m, s]) => h * 3600 + m * 60 + s >= 60)
  .map(([h, m, s]) => ({
    text: `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}`,
    seconds: h * 3600 + m * 60 + s,
  }));

const spec = fc.record(
  {
    posture: fc.constantFrom<Posture>(Posture.Observe, Posture.Challenge, Posture.Strict),
    captcha: fc.record({
      provider: fc.constantFrom<CaptchaProvider>(CaptchaProvider.Turnstile, CaptchaProvider.HCaptcha),
      siteKey: fc.string({ minLength: 1, maxLength: 20 }),
      secretRef: fc.record({ name }),
    }),
    difficulty: fc.integer({ min: 8, max: 24 }),
    clearance,
    challenge: fc.boolean(),
    blocklists: fc.uniqueArray(name, { maxLength: 4 }),
    allowlists: fc.uniqueArray(name, { maxLength: 4 }),
  },
  { requiredKeys: [] },
);

describe('readSiteConfig', () => {
  it('reads back what the operator writes for any spec, the defaults filled in', () => {
    fc.assert(
      fc.property(spec, (s) => {
        const edgeSite: EdgeSiteSpec = {
          domains: ['a.example.com'],
          upstream: { name: 'app', port: 80 },
          ...(s.posture ? { posture: s.posture } : {}),
          ...(s.captcha ? { captcha: s.captcha } : {}),
          filter: {
            ...(s.difficulty === undefined ? {} : { difficulty: s.difficulty }),
            ...(s.clearance === undefined ? {} : { clearance: s.clearance.text }),
          },
          security: {
            ...(s.challenge === undefined ? {} : { challenge: s.challenge }),
            ...(s.blocklists === undefined ? {} : { blocklists: s.blocklists }),
            ...(s.allowlists === undefined ? {} : { allowlists: s.allowlists }),
          },
        };
        const read = readSiteConfig(siteConfigText(edgeSite));
        assert.ok(read.ok, read.ok ? '' : read.problems.join('; '));
        assert.deepEqual(read.config, {
          posture: s.posture ?? 'Challenge',
          ...(s.captcha ? { captcha: { provider: s.captcha.provider, siteKey: s.captcha.siteKey } } : {}),
          difficulty: s.difficulty ?? 16,
          clearanceSeconds: s.clearance?.seconds ?? 3600,
          challenge: s.challenge ?? true,
          blocklists:
            s.blocklists === undefined ? { kind: 'AllPresumed' } : { kind: 'Named', names: s.blocklists },
          allowlists: s.allowlists ?? [],
        });
      }),
    );
  });

  it('refuses a file the operator did not write, naming every problem', () => {
    const good = JSON.parse(
      siteConfigText({ domains: ['a.example.com'], upstream: { name: 'app', port: 80 } }),
    );
    const refused = (doc: unknown): readonly string[] => {
      const read = readSiteConfig(typeof doc === 'string' ? doc : JSON.stringify(doc));
      assert.equal(read.ok, false, JSON.stringify(doc));
      return read.ok ? [] : read.problems;
    };
    assert.match(refused('{"posture":').join(), /not JSON/);
    assert.match(refused([]).join(), /not a JSON object/);
    assert.match(refused({ ...good, posture: 'Panic' }).join(), /posture is "Panic"/);
    assert.match(
      refused({ ...good, filter: { ...good.filter, difficulty: 7 } }).join(),
      /filter.difficulty is 7/,
    );
    assert.match(
      refused({ ...good, filter: { ...good.filter, clearance: 'soon' } }).join(),
      /filter.clearance/,
    );
    assert.match(refused({ ...good, allowlists: ['../etc'] }).join(), /allowlists holds "..\/etc"/);
    assert.match(refused({ ...good, blocklists: ['proxies'] }).join(), /blocklists is neither/);
    const both = refused({ ...good, posture: 1, challenge: 'yes' });
    assert.equal(both.length, 2, both.join('; '));
  });

  it('reads clearance durations as the CRD writes them', () => {
    assert.equal(durationSeconds('1h'), 3600);
    assert.equal(durationSeconds('1h30m'), 5400);
    assert.equal(durationSeconds('90s'), 90);
    assert.equal(durationSeconds(''), undefined);
    assert.equal(durationSeconds('1d'), undefined);
    assert.equal(durationSeconds('30m1h'), undefined);
  });
});

describe('readDeciderEnv', () => {
  const env = {
    EXOLEDGE_SITE_NAMESPACE: 'shop',
    EXOLEDGE_SITE: 'shop',
    EXOLEDGE_SITE_CONFIG: '/etc/exoledge/site/config.json',
    EXOLEDGE_SHARD_NAMESPACE: 'exoledge-system',
    EXOLEDGE_ALLOWLISTS_DIR: '/etc/exoledge/allowlists',
    EXOLEDGE_LISTEN: ':8080',
  };

  it('reads the operator contract with no Valkey and no trusted hop by default', () => {
    assert.deepEqual(readDeciderEnv(env), {
      ok: true,
      settings: {
        siteNamespace: 'shop',
        site: 'shop',
        siteConfigPath: '/etc/exoledge/site/config.json',
        shardNamespace: 'exoledge-system',
        allowlistsDir: '/etc/exoledge/allowlists',
        listen: { host: undefined, port: 8080 },
        valkeyUrl: undefined,
        trustedHops: 0,
        clientAddressHeader: undefined,
        signingKeys: [],
        captchaSecret: undefined,
        captchaVerifyUrl: undefined,
      },
    });
    const full = readDeciderEnv({
      ...env,
      EXOLEDGE_VALKEY_URL: 'redis://valkey:6379',
      EXOLEDGE_TRUSTED_HOPS: '2',
      EXOLEDGE_CAPTCHA_SECRET: 'shh',
      EXOLEDGE_CAPTCHA_VERIFY_URL: 'https://captcha-proxy.internal/siteverify',
      EXOLEDGE_CLIENT_ADDRESS_HEADER: 'CF-Connecting-IP',
      EXOLEDGE_SIGNING_KEYS: `${'n'.repeat(64)}, ${'o'.repeat(32)}`,
    });
    assert.ok(full.ok);
    assert.equal(full.settings.clientAddressHeader, 'cf-connecting-ip');
    assert.deepEqual(full.settings.signingKeys, [Buffer.from('n'.repeat(64)), Buffer.from('o'.repeat(32))]);
    assert.equal(full.settings.valkeyUrl, 'redis://valkey:6379');
    assert.equal(full.settings.trustedHops, 2);
    assert.equal(full.settings.captchaSecret, 'shh');
    assert.equal(full.settings.captchaVerifyUrl, 'https://captcha-proxy.internal/siteverify');
  });

  it('lists every problem of a bad environment', () => {
    const read = readDeciderEnv({
      ...env,
      EXOLEDGE_SITE: '',
      EXOLEDGE_LISTEN: 'everywhere',
      EXOLEDGE_VALKEY_URL: 'http://valkey',
      EXOLEDGE_TRUSTED_HOPS: '-1',
      EXOLEDGE_CAPTCHA_VERIFY_URL: 'ftp://captcha',
      EXOLEDGE_CLIENT_ADDRESS_HEADER: 'x client ip',
      EXOLEDGE_SIGNING_KEYS: 'short-secret-key',
    });
    assert.equal(read.ok, false);
    assert.deepEqual(read.ok ? [] : read.problems.map((p) => p.split(' ')[0]), [
      'EXOLEDGE_SITE',
      'EXOLEDGE_LISTEN',
      'EXOLEDGE_VALKEY_URL',
      'EXOLEDGE_TRUSTED_HOPS',
      'EXOLEDGE_CLIENT_ADDRESS_HEADER',
      'EXOLEDGE_SIGNING_KEYS:',
      'EXOLEDGE_CAPTCHA_VERIFY_URL',
    ]);
    // A key is a secret: a problem with one never repeats it.
    assert.ok(!read.ok && !read.problems.join('\n').includes('short-secret-key'));
  });

  it('reads a listen address with or without a host', () => {
    assert.deepEqual(readListen(':8080'), { host: undefined, port: 8080 });
    assert.deepEqual(readListen('127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
    assert.deepEqual(readListen('[::1]:9000'), { host: '::1', port: 9000 });
    assert.equal(readListen(':70000'), undefined);
    assert.equal(readListen('host:'), undefined);
  });
});

describe('readAllowlist', () => {
  it('reads addresses and prefixes of both families across files, with comments', () => {
    const read = readAllowlist('payment', [
      { key: 'v4.txt', text: '# PSP\n198.51.100.9\n203.0.113.0/24 ; office\n\n' },
      { key: 'v6.txt', text: '2001:db8:aa::/48\n' },
    ]);
    assert.ok(read.ok);
    assert.equal(read.entries, 3);
  });

  it('refuses the whole allowlist for one line it cannot read, whatever the good lines around it', () => {
    const good = fc.oneof(
      fc.ipV4(),
      fc.ipV4().map((a) => `${a.replace(/\.[0-9]+$/, '.0')}/24`),
      fc.constantFrom('# comment', '', '2001:db8::1', '2001:db8:1::/48'),
    );
    const bad = fc.constantFrom(
      '1.2.3',
      '010.0.0.1',
      'example.com',
      '1.2.3.4:80',
      '0.0.0.0/0',
      '::/0',
      '10.0.0.0/7',
    );
    fc.assert(
      fc.property(fc.array(good, { maxLength: 10 }), bad, fc.nat(), (lines, wrong, at) => {
        const all = [...lines];
        const line = at % (all.length + 1);
        all.splice(line, 0, wrong);
        const read = readAllowlist('crawlers', [{ key: 'list', text: all.join('\n') }]);
        assert.equal(read.ok, false, all.join(' | '));
        assert.match(
          read.ok ? '' : read.problems[0]!,
          new RegExp(`allowlist crawlers, key list, line ${line + 1}:`),
        );
      }),
    );
  });
});
