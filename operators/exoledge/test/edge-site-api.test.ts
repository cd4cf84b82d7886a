/**
 * The EdgeSite API, without an apiserver: the committed CRD is what the TypeScript
 * definition generates; the security switches are
 * resolved to the product defaults, on, whatever part of them a manifest leaves out; the
 * docs quote every CEL message; and each CEL rule, evaluated by `@operators/cel`, refuses
 * the mistake it is written for with its own message and accepts good specs. (The real
 * apiserver's verdict on the same rules, cost estimate included, is edge-site-crd.test.ts.)
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CelEnvironment, formatCelError, fromJson } from '@operators/cel';
import type { JSONSchemaProps, ValidationRule } from '@operators/kit';
import fc from 'fast-check';
import { edgeSiteCrd, type SecuritySpec } from '../src/api/edge-site.ts';
import { generated } from '../src/api/gen-crds.ts';
import {
  DEFAULT_ALLOWLISTS,
  DEFAULT_BLOCKLISTS,
  effectiveSecurity,
  SECURITY_SWITCHES,
} from '../src/domain/edge-site/security.ts';

const PACKAGE = join(import.meta.dirname, '..');

function openApiSchema(): JSONSchemaProps {
  const spec = edgeSiteCrd().spec as { versions: { schema: { openAPIV3Schema: JSONSchemaProps } }[] };
  const schema = spec.versions[0]?.schema.openAPIV3Schema;
  assert.ok(schema);
  return schema;
}

/** The schema node at `path`: property names separated by dots, `[]` for an array's items. */
function nodeAt(path: string): JSONSchemaProps {
  let node = openApiSchema();
  for (const step of path.split('.').filter((s) => s !== '')) {
    const next = step === '[]' ? node.items : node.properties?.[step];
    assert.ok(next, `no schema at ${path} (${step})`);
    node = next;
  }
  return node;
}

/** Every CEL message in a schema, depth first. */
function celMessages(schema: JSONSchemaProps, out: string[] = []): string[] {
  for (const v of schema['x-kubernetes-validations'] ?? []) if (v.message) out.push(v.message);
  for (const p of Object.values(schema.properties ?? {})) celMessages(p, out);
  if (schema.items) celMessages(schema.items, out);
  return out;
}

describe('the committed EdgeSite CRD', () => {
  it('is what gen-crds generates from src/api (run `npm run gen-crds -w @operators/exoledge` after a change)', () => {
    const edgeSites = generated().filter(({ path }) => path.endsWith('edgesites.yaml'));
    assert.equal(edgeSites.length, 1);
    for (const { path, text } of edgeSites)
      assert.equal(readFileSync(path, 'utf8'), text, `${path} is stale`);
  });

  it('gives the security switches no schema default, so that an absent switch stays absent in the stored object', () => {
    const security = nodeAt('spec.security');
    assert.equal(security.default, undefined);
    for (const [name, field] of Object.entries(security.properties ?? {})) {
      assert.equal(field.default, undefined, `spec.security.${name} has a default`);
    }
    assert.deepEqual(Object.keys(security.properties ?? {}).sort(), [
      ...[...SECURITY_SWITCHES, 'blocklists', 'allowlists'].sort(),
    ]);
  });
});

describe('effectiveSecurity', () => {
  it('turns every switch on when the manifest has no security block', () => {
    assert.deepEqual(effectiveSecurity({}), {
      waf: true,
      challenge: true,
      sensitiveFiles: true,
      blocklists: { kind: 'AllPresumed' },
      allowlists: [],
    });
  });

  it('turns every switch on when the security block is empty', () => {
    assert.deepEqual(effectiveSecurity({ security: {} }), effectiveSecurity({}));
  });

  it('turns a switch off only when it is written false, and leaves the others on', () => {
    for (const off of SECURITY_SWITCHES) {
      const resolved = effectiveSecurity({ security: { [off]: false } });
      for (const s of SECURITY_SWITCHES) assert.equal(resolved[s], s !== off, `${off}: false, then ${s}`);
    }
  });

  it('keeps blocklists absent (every Presumed list) and [] (none) distinct', () => {
    assert.deepEqual(effectiveSecurity({ security: {} }).blocklists, { kind: 'AllPresumed' });
    assert.deepEqual(effectiveSecurity({ security: { blocklists: [] } }).blocklists, {
      kind: 'Named',
      names: [],
    });
    assert.deepEqual(effectiveSecurity({ security: { blocklists: ['proxies', 'tor'] } }).blocklists, {
      kind: 'Named',
      names: ['proxies', 'tor'],
    });
  });

  it('exempts no address unless an allowlist is named', () => {
    assert.deepEqual(effectiveSecurity({ security: { waf: true } }).allowlists, []);
    assert.deepEqual(effectiveSecurity({ security: { allowlists: ['payment'] } }).allowlists, ['payment']);
  });

  it('returns defaults and lists that a caller cannot change under another site', () => {
    assert.ok(Object.isFrozen(DEFAULT_BLOCKLISTS) && Object.isFrozen(DEFAULT_ALLOWLISTS));
    const names = ['proxies'];
    const resolved = effectiveSecurity({ security: { blocklists: names, allowlists: names } });
    names.push('tor');
    assert.deepEqual(resolved.blocklists, { kind: 'Named', names: ['proxies'] });
    assert.deepEqual(resolved.allowlists, ['proxies']);
  });

  it('never turns a switch off unless it is written false, whatever part of the block is given', () => {
    const aSwitch = fc.option(fc.boolean(), { nil: undefined });
    const names = fc.option(
      fc.uniqueArray(fc.constantFrom('proxies', 'tor', 'cve', 'dyndns'), { maxLength: 4 }),
      {
        nil: undefined,
      },
    );
    const security: fc.Arbitrary<SecuritySpec> = fc.record(
      { waf: aSwitch, challenge: aSwitch, sensitiveFiles: aSwitch, blocklists: names, allowlists: names },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.option(security, { nil: undefined }), (s) => {
        const resolved = effectiveSecurity(s === undefined ? {} : { security: s });
        for (const name of SECURITY_SWITCHES) {
          assert.equal(resolved[name], s?.[name] !== false, name);
        }
        if (s?.blocklists === undefined) assert.deepEqual(resolved.blocklists, { kind: 'AllPresumed' });
        else assert.deepEqual(resolved.blocklists, { kind: 'Named', names: s.blocklists });
        assert.deepEqual(resolved.allowlists, s?.allowlists ?? []);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the docs of EdgeSite', () => {
  it('quote every CEL message of the CRD word for word, in the EdgeSite section', () => {
    const docs = readFileSync(join(PACKAGE, '..', '..', 'docs', 'exoledge.md'), 'utf8');
    const start = docs.indexOf('\n## EdgeSite\n');
    assert.ok(start >= 0, 'docs/exoledge.md has no "## EdgeSite" section');
    const end = docs.indexOf('\n## ', start + 1);
    const section = docs.slice(start, end < 0 ? undefined : end);
    const messages = [...new Set(celMessages(openApiSchema()))];
    assert.ok(messages.length >= 25, `too few CEL messages found: ${messages.length}`);
    assert.deepEqual(
      messages.filter((m) => !section.includes(`\`${m}\``)),
      [],
    );
  });
});

// ---------------------------------------------------------------------------------------
// The CEL rules, evaluated

const env = new CelEnvironment({ variables: { self: 'dyn' } });

/** The messages of the rules at `path` that refuse `value` (an evaluation error fails the test). */
function refusals(path: string, value: unknown): string[] {
  const rules: readonly ValidationRule[] = nodeAt(path)['x-kubernetes-validations'] ?? [];
  assert.ok(rules.length > 0, `no rule at ${path}`);
  const self = fromJson(value);
  assert.ok(self.ok);
  const refused: string[] = [];
  for (const { rule, message } of rules) {
    const program = env.compile(rule);
    assert.ok(program.ok, program.ok ? '' : formatCelError(program.error));
    const verdict = program.value.evaluateBool({ self: self.value });
    assert.ok(verdict.ok, verdict.ok ? '' : `${rule} on ${JSON.stringify(value)}: ${verdict.error.message}`);
    if (!verdict.value) refused.push(message ?? rule);
  }
  return refused;
}

/** `path`: for each value, the one message expected (a regex on it), or none for an accepted value. */
function check(path: string, cases: readonly (readonly [unknown, RegExp | null])[]): void {
  for (const [value, expected] of cases) {
    const got = refusals(path, value);
    if (expected === null) assert.deepEqual(got, [], `${path} = ${JSON.stringify(value)} is accepted`);
    else {
      assert.equal(
        got.length,
        1,
        `${path} = ${JSON.stringify(value)}: one message, got ${JSON.stringify(got)}`,
      );
      assert.match(got[0] ?? '', expected, `${path} = ${JSON.stringify(value)}`);
    }
  }
}

describe('the CEL rules of EdgeSite', () => {
  it('refuse each malformed domain once, with the message for its mistake', () => {
    check('spec.domains.[]', [
      ['shop.example.com', null],
      ['*.example.com', null],
      ['localhost', null],
      ['xn--caf-dma.example', null],
      ['https://shop.example.com', /no scheme/],
      ['shop.example.com/app', /no path/],
      ['shop.example.com:8443', /no port/],
      ['Shop.Example.com', /lowercase/],
      ['a.*.example.com', /wildcard/],
      ['*', /wildcard/],
      ['**.example.com', /wildcard/],
      ['192.0.2.10', /not an IP address/],
      ['shop_1.example.com', /DNS name/],
      ['-shop.example.com', /DNS name/],
      ['shop..example.com', /DNS name/],
      ['', /DNS name/],
      [`${'a'.repeat(64)}.example.com`, /DNS name/],
    ]);
  });

  it('refuse route prefixes that Gateway API refuses or that never match', () => {
    check('spec.routes.[].prefix', [
      ['/', null],
      ['/app', null],
      ['/app/', null],
      ['/caf%C3%A9', null],
      ["/a-b_c.d~!$&'()*+,;=:@", null],
      ['app', /starting with \//],
      ['/app?x=1', /no query/],
      ['/app#top', /no query/],
      ['/a//b', /normalised/],
      ['/a/./b', /normalised/],
      ['/a/../b', /normalised/],
      ['/a/..', /normalised/],
      ['/a%2Fb', /encoded slash/],
      ['/my app', /characters of a URL path/],
      ['/a%zz', /characters of a URL path/],
    ]);
  });

  it('refuse a prefix given twice, a trailing slash included', () => {
    check('spec.routes', [
      [[{ prefix: '/' }, { prefix: '/app' }, { prefix: '/apple' }], null],
      [[{ prefix: '/app' }, { prefix: '/app/' }], /appear only once/],
      [[{ prefix: '/app' }, { prefix: '/app' }], /appear only once/],
    ]);
  });

  it("refuse an empty upstreams list and a Service given twice in one route's upstreams", () => {
    check('spec.routes.[].upstreams', [
      [
        [
          { name: 'demo', port: 80, weight: 300 },
          { name: 'demo-next', port: 80, weight: 100 },
          { name: 'demo', port: 8080, weight: 0 },
        ],
        null,
      ],
      [[], /at least one Service/],
      [
        [
          { name: 'demo', port: 80, weight: 1 },
          { name: 'demo', port: 80, weight: 2 },
        ],
        /merge their weights/,
      ],
    ]);
  });

  it('refuse names that are not names of their kind', () => {
    check('spec.upstream.name', [
      ['demo', null],
      ['1demo', /name of a Service/],
      ['demo.web', /name of a Service/],
    ]);
    check('spec.tls.secretName', [
      ['shop.example.com-tls', null],
      ['Shop', /name of a Secret/],
    ]);
    check('spec.gatewayRef.namespace', [
      ['edge', null],
      ['edge.system', /name of a namespace/],
    ]);
    check('spec.security.blocklists.[]', [
      ['proxies', null],
      ['cve_2024_3400', /BlocklistSource names/],
    ]);
    check('spec.security.allowlists.[]', [
      ['payment', null],
      ['Payment', /ConfigMap names/],
    ]);
    check('spec.captcha.secretRef.key', [
      ['secret', null],
      ['secret/key', /key of the Secret/],
    ]);
    check('spec.captcha.siteKey', [
      ['0x4AAAAAAAB_c-d', null],
      ['"><script>', /public site key/],
    ]);
  });

  it('hold clearance between 1m and 168h, in hours, minutes and seconds', () => {
    check('spec.filter.clearance', [
      ['1h', null],
      ['1h30m', null],
      ['168h', null],
      ['30s', /from 1m to 168h/],
      ['169h', /from 1m to 168h/],
      ['2 hours', /from 1m to 168h/],
      ['', /from 1m to 168h/],
    ]);
  });

  it('ask for tls with a gateway of its own, and refuse it on a shared gateway', () => {
    const base = { domains: ['shop.example.com'], upstream: { name: 'demo', port: 80 } };
    check('spec', [
      [{ ...base, tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } } }, null],
      [{ ...base, gatewayRef: { name: 'edge', namespace: 'edge-system' } }, null],
      [base, /terminates TLS/],
      [{ ...base, gatewayRef: { name: 'edge' }, tls: { issuerRef: { name: 'letsencrypt' } } }, /remove tls/],
    ]);
  });

  it('hold the site name to a Service-name prefix', () => {
    check('', [
      [{ metadata: { name: 'shop' } }, null],
      [{ metadata: { name: 'a'.repeat(52) } }, null],
      [{ metadata: { name: 'a'.repeat(53) } }, /at most 52 characters/],
      [{ metadata: { name: '1shop' } }, /start with a letter/],
      [{ metadata: { name: 'shop.example' } }, /start with a letter/],
    ]);
  });
});
