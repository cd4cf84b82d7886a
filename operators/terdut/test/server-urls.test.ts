// `--server-url NS/NAME=URL` (repeatable; `NS/*` and `*/*` as wildcards): where a
// TerdutServer answers when the operator runs outside the cluster. The most specific
// entry wins — NS/NAME, then NS/*, then */* — and with none, the in-cluster address.
// The oracle is a lookup over the generated entries, never over the parsed map.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { TerdutServer } from '../src/api/terdut-server.ts';
import { parseServerUrls, serverUrlMapper } from '../src/server-urls.ts';

const IN_CLUSTER = 'http://terdut.platform-oncall.svc:8080';

/** Only what the mapper reads of a TerdutServer. */
function server(namespace: string, name: string): TerdutServer {
  const partial: Pick<TerdutServer, 'metadata'> = { metadata: { namespace, name } };
  return partial as TerdutServer;
}

function valid(texts: readonly string[]): ReadonlyMap<string, string> {
  const got = parseServerUrls(texts);
  assert.equal(got.kind, 'Valid', JSON.stringify(got));
  return got.kind === 'Valid' ? got.map : new Map();
}

describe('parsing --server-url', () => {
  it('reads NS/NAME=URL, NS/*=URL and */*=URL, without a trailing slash', () => {
    const map = valid([
      'platform-oncall/terdut=http://127.0.0.1:18080/',
      'team-a/*=https://terdut.example.com//',
      '*/*=http://localhost:8080',
    ]);
    assert.deepEqual([...map.entries()].sort(), [
      ['*/*', 'http://localhost:8080'],
      ['platform-oncall/terdut', 'http://127.0.0.1:18080'],
      ['team-a/*', 'https://terdut.example.com'],
    ]);
  });

  it('accepts a dotted server name', () => {
    assert.deepEqual([...valid(['ns/terdut.v2=http://h:1']).entries()], [['ns/terdut.v2', 'http://h:1']]);
  });

  it('skips blanks and spaces around entries (as in a comma-separated TERDUT_SERVER_URLS)', () => {
    const map = valid(['', '  ', ' ns/terdut=http://h:1 ']);
    assert.deepEqual([...map.entries()], [['ns/terdut', 'http://h:1']]);
    assert.equal(valid([]).size, 0);
  });

  it('refuses an entry that is not NS/NAME=http(s)://…, quoting it', () => {
    for (const bad of [
      'terdut=http://h:1',
      'ns/terdut',
      'ns/terdut=',
      'ns/terdut=h:1',
      'ns/terdut=ftp://h:1',
      'ns/terdut=http://',
      'ns/terdut=http://h :1',
      'NS/terdut=http://h:1',
      'ns/Terdut=http://h:1',
      'ns.x/terdut=http://h:1',
      'ns/terdut/x=http://h:1',
      '**/*=http://h:1',
    ]) {
      const got = parseServerUrls(['ns/ok=http://h:1', bad]);
      assert.equal(got.kind, 'Invalid', bad);
      if (got.kind === 'Invalid') assert.ok(got.message.includes(`"${bad}"`), got.message);
    }
  });

  it('never accepts an entry that cannot reach any server (*/NAME)', () => {
    // Accepting `*/terdut` and then never using it leaves the operator calling the in-cluster
    // address it cannot reach, with no word why; the entry must be refused or honoured.
    const got = parseServerUrls(['*/terdut=http://127.0.0.1:18080']);
    if (got.kind === 'Valid') {
      const map = serverUrlMapper(got.map);
      assert.ok(map);
      assert.equal(map(server('any-namespace', 'terdut'), IN_CLUSTER), 'http://127.0.0.1:18080');
    }
  });
});

describe('choosing a server’s URL', () => {
  it('is not asked at all without entries: the in-cluster address is used', () => {
    assert.equal(serverUrlMapper(new Map()), undefined);
  });

  it('prefers NS/NAME over NS/* over */*, and falls back to the in-cluster address', () => {
    const map = serverUrlMapper(
      valid(['*/*=http://any:1', 'platform-oncall/*=http://ns:1', 'platform-oncall/terdut=http://exact:1']),
    );
    assert.ok(map);
    assert.equal(map(server('platform-oncall', 'terdut'), IN_CLUSTER), 'http://exact:1');
    assert.equal(map(server('platform-oncall', 'other'), IN_CLUSTER), 'http://ns:1');
    assert.equal(map(server('team-a', 'terdut'), IN_CLUSTER), 'http://any:1');
    const narrow = serverUrlMapper(valid(['platform-oncall/terdut=http://exact:1']));
    assert.ok(narrow);
    assert.equal(narrow(server('team-a', 'terdut'), IN_CLUSTER), IN_CLUSTER);
  });

  it('picks the most specific entry for any entries and server', () => {
    const ns = fc.constantFrom('platform-oncall', 'team-a', 'b');
    const name = fc.constantFrom('terdut', 'terdut.v2', 'x');
    const key = fc.oneof(
      fc.tuple(ns, name).map(([n, s]) => `${n}/${s}`),
      ns.map((n) => `${n}/*`),
      fc.constant('*/*'),
    );
    const entry = fc.record({
      key,
      url: fc.constantFrom('http://127.0.0.1:1', 'https://h.example:443', 'http://localhost:8080/base'),
      slashes: fc.constantFrom('', '/', '//'),
      pad: fc.constantFrom('', ' '),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(entry, { selector: (e) => e.key, maxLength: 6 }),
        ns,
        name,
        (entries, serverNs, serverName) => {
          const texts = entries.map((e) => `${e.pad}${e.key}=${e.url}${e.slashes}${e.pad}`);
          const urlOf = (k: string): string | undefined => entries.find((e) => e.key === k)?.url;
          const want =
            urlOf(`${serverNs}/${serverName}`) ?? urlOf(`${serverNs}/*`) ?? urlOf('*/*') ?? IN_CLUSTER;
          const map = serverUrlMapper(valid(texts));
          if (entries.length === 0) {
            assert.equal(map, undefined);
            return;
          }
          assert.ok(map);
          assert.equal(map(server(serverNs, serverName), IN_CLUSTER), want);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
