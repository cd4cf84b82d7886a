/**
 * The console's directory as the bridge reads it, without an apiserver: the JSON format
 * (`{"domains": {host: record}}`), a record read field for field, every shape mistake
 * reported with its field (a missing box, an unknown field, a wrong type, a posture that
 * does not exist), values left for the apiserver to judge, and the `host` of a request
 * read strictly and compared in lowercase.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeRecord, parseHost, readDirectory } from '../src/domain/bridge/index.ts';
import { shopRecord } from './support/bridge-records.ts';

/**
 * The shop record as the console writes it in its file. Its JSON is the record field for
 * field (a plain literal, nothing JSON would drop), so the record itself stands for it.
 */
const SHOP_JSON = shopRecord();

function problemsOf(value: unknown): readonly string[] {
  const decoded = decodeRecord(value);
  assert.equal(decoded.kind, 'Malformed', 'the record is refused');
  return decoded.kind === 'Malformed' ? decoded.problems : [];
}

describe('a record of the console directory', () => {
  it('reads the whole record as written', () => {
    assert.deepEqual(decodeRecord(SHOP_JSON), { kind: 'Record', record: shopRecord() });
  });

  it('refuses a record without one of its three boxes: an absent box would read as on', () => {
    const problems = problemsOf({ ...SHOP_JSON, switches: { waf: true, sensitiveFiles: false } });
    assert.deepEqual(problems, [
      'switches.challenge: expected true or false (an unchecked box is false), got nothing',
    ]);
  });

  it('refuses an unknown field, at any depth, rather than drop it', () => {
    assert.deepEqual(problemsOf({ ...SHOP_JSON, switchs: {} }), [
      'the record: unknown field "switchs" (known: site, domains, upstream, routes, posture, captcha, tls, gatewayRef, switches, blocklists, allowlists)',
    ]);
    assert.deepEqual(problemsOf({ ...SHOP_JSON, tls: { issuerRef: { name: 'le' }, secretname: 'x' } }), [
      'tls: unknown field "secretname" (known: issuerRef, secretName)',
    ]);
  });

  it('names the field of every wrong type, all at once', () => {
    const problems = problemsOf({
      ...SHOP_JSON,
      upstream: { name: 'docs', port: '80' },
      routes: [{ prefix: '/', upstreams: [{ name: 7, port: 80 }] }],
      blocklists: 'proxies',
    });
    assert.deepEqual(problems, [
      'upstream.port: expected a number, got string "80"',
      'routes[0].upstreams[0].name: expected a string, got number 7',
      'blocklists: expected a list, got string "proxies"',
    ]);
  });

  it('refuses a posture, captcha provider or issuer kind that does not exist', () => {
    assert.deepEqual(problemsOf({ ...SHOP_JSON, posture: 'Paranoid' }), [
      'posture: expected one of Observe, Challenge, Strict, got string "Paranoid"',
    ]);
    assert.deepEqual(
      problemsOf({ ...SHOP_JSON, captcha: { ...SHOP_JSON.captcha, provider: 'FriendlyCaptcha' } }),
      ['captcha.provider: expected one of Turnstile, HCaptcha, ReCaptcha, got string "FriendlyCaptcha"'],
    );
    assert.deepEqual(problemsOf({ ...SHOP_JSON, tls: { issuerRef: { name: 'le', kind: 'Vault' } } }), [
      'tls.issuerRef.kind: expected one of Issuer, ClusterIssuer, got string "Vault"',
    ]);
  });

  it('refuses a site namespace or name that could not be a path segment of the dry-run', () => {
    assert.deepEqual(problemsOf({ ...SHOP_JSON, site: { namespace: 'shop', name: '..' } }), [
      'site.name: ".." is not an object name: lowercase letters, digits, hyphens and dots',
    ]);
    assert.deepEqual(problemsOf({ ...SHOP_JSON, site: { namespace: 'a/b', name: 'shop' } }), [
      'site.namespace: "a/b" is not a namespace name: lowercase letters, digits and hyphens, at most 63',
    ]);
  });

  it('leaves values to the apiserver: a domain with a scheme and capitals, a port out of range, are read as written', () => {
    const decoded = decodeRecord({
      ...SHOP_JSON,
      domains: ['https://Shop.example.com'],
      upstream: { name: 'Docs', port: 70_000 },
    });
    assert.equal(decoded.kind, 'Record');
    if (decoded.kind === 'Record') {
      assert.deepEqual(decoded.record.domains, ['https://Shop.example.com']);
      assert.deepEqual(decoded.record.upstream, { name: 'Docs', port: 70_000 });
    }
  });
});

describe('the JSON format of the directory', () => {
  it('holds records by lowercase host', () => {
    const contents = readDirectory(JSON.stringify({ domains: { 'Shop.Example.com': SHOP_JSON } }));
    assert.equal(contents.kind, 'Read');
    if (contents.kind !== 'Read') return;
    assert.deepEqual([...contents.entries.keys()], ['shop.example.com']);
    assert.deepEqual(contents.entries.get('shop.example.com'), { kind: 'Record', record: shopRecord() });
    assert.deepEqual(contents.problems, []);
  });

  it('keeps a record it cannot read as Malformed, and serves the others', () => {
    const contents = readDirectory(
      JSON.stringify({ domains: { 'shop.example.com': SHOP_JSON, 'broken.example.com': { site: 1 } } }),
    );
    assert.equal(contents.kind, 'Read');
    if (contents.kind !== 'Read') return;
    assert.equal(contents.entries.get('shop.example.com')?.kind, 'Record');
    assert.equal(contents.entries.get('broken.example.com')?.kind, 'Malformed');
  });

  it('serves neither of two keys differing only by case, and says so', () => {
    const contents = readDirectory(
      JSON.stringify({ domains: { 'shop.example.com': SHOP_JSON, 'SHOP.example.com': SHOP_JSON } }),
    );
    assert.equal(contents.kind, 'Read');
    if (contents.kind !== 'Read') return;
    assert.equal(contents.entries.size, 0);
    assert.deepEqual(contents.problems, [
      'domains: shop.example.com is written more than once (keys differing by case): neither is served',
    ]);
  });

  it('reports a key that is not a host name, and serves the others', () => {
    const contents = readDirectory(
      JSON.stringify({ domains: { 'https://x.example.com': SHOP_JSON, 'shop.example.com': SHOP_JSON } }),
    );
    assert.equal(contents.kind, 'Read');
    if (contents.kind !== 'Read') return;
    assert.deepEqual([...contents.entries.keys()], ['shop.example.com']);
    assert.equal(contents.problems.length, 1);
    assert.match(contents.problems[0] ?? '', /^domains\["https:\/\/x\.example\.com"\]: .* has a scheme/);
  });

  it('is unreadable when it is not JSON or has no domains object', () => {
    assert.equal(readDirectory('{"domains": ').kind, 'Unreadable');
    assert.deepEqual(readDirectory('{"shop.example.com": {}}'), {
      kind: 'Unreadable',
      message:
        'expected an object with a "domains" object, by host: {"domains": {"shop.example.com": {...}}}',
    });
    assert.equal(readDirectory('[]').kind, 'Unreadable');
  });
});

describe('the host of a request', () => {
  it('is a DNS name, compared in lowercase, a wildcard allowed as the whole first label', () => {
    assert.deepEqual(parseHost(['shop.example.com']), { kind: 'Host', host: 'shop.example.com' });
    assert.deepEqual(parseHost(['Shop.EXAMPLE.com']), { kind: 'Host', host: 'shop.example.com' });
    assert.deepEqual(parseHost(['*.shop.example.com']), { kind: 'Host', host: '*.shop.example.com' });
  });

  it('refuses none, several, a scheme, a path, a port, and what is not a name, saying what to write', () => {
    const bad: [readonly string[], RegExp][] = [
      [[], /needs a host, such as \?host=shop\.example\.com/],
      [['a.example.com', 'b.example.com'], /names 2 hosts: ask for one at a time/],
      [['https://shop.example.com'], /has a scheme/],
      [['shop.example.com/app'], /has a path/],
      [['shop.example.com:8443'], /has a port/],
      [[''], /is not a DNS name/],
      [['shop..example.com'], /is not a DNS name/],
      [['-shop.example.com'], /is not a DNS name/],
      [['shop.*.example.com'], /is not a DNS name/],
      [['shop example.com'], /is not a DNS name/],
      [[`${'a'.repeat(64)}.example.com`], /is not a DNS name/],
    ];
    for (const [values, message] of bad) {
      const parsed = parseHost(values);
      assert.equal(parsed.kind, 'BadHost', JSON.stringify(values));
      if (parsed.kind === 'BadHost') assert.match(parsed.message, message, JSON.stringify(values));
    }
  });
});
