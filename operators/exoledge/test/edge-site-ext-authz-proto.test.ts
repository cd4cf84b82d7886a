/**
 * The ext_authz EnvoyFilter's `typed_config`, checked against Envoy's own API descriptors
 * (the FileDescriptorSet of envoy.extensions.filters.http.ext_authz.v3 and its imports, as
 * go-control-plane compiles them; fixtures/envoy-ext-authz.README.md says which release
 * and how to regenerate) the way Envoy and istiod read it: proto3 JSON, strictly, then Envoy's
 * protoc-gen-validate rules and deprecation annotations (support/proto-strict.ts). No
 * istiod or Envoy runs: this says the configuration is one Envoy's API accepts, not that
 * a proxy calls the decider with it. The Istio side Envoy depends on is checked too: the
 * filter's name, and the cluster `outbound|<port>||<svc>.<ns>.svc.cluster.local` read back
 * against the decider Service as decider.ts renders it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EDGE_SITE, type EdgeSite, type EdgeSiteSpec } from '../src/api/edge-site.ts';
import { deciderService } from '../src/domain/edge-site/decider.ts';
import { extAuthzFilter } from '../src/domain/edge-site/filters.ts';
import type { EdgeSiteOptions } from '../src/domain/edge-site/index.ts';
import { siteRef } from '../src/domain/edge-site/owner.ts';
import { EDGE_OPTIONS } from './support/edge-site-options.ts';
import { ProtoDescriptors, type ProtoFinding } from './support/proto-strict.ts';

const ENVOY = ProtoDescriptors.load(
  fileURLToPath(new URL('./fixtures/envoy-ext-authz.binpb', import.meta.url)),
);
const ANY = 'google.protobuf.Any';
const EXT_AUTHZ = 'envoy.extensions.filters.http.ext_authz.v3.ExtAuthz';
const EXT_AUTHZ_URL = `type.googleapis.com/${EXT_AUTHZ}`;
/** Where the walker reports the fields of the Any's payload. */
const IN = `(${EXT_AUTHZ})`;

type JsonObject = Record<string, unknown>;

interface Case {
  readonly title: string;
  readonly name: string;
  readonly namespace: string;
  readonly spec: EdgeSiteSpec;
  readonly options: EdgeSiteOptions;
  readonly failureModeAllow: boolean;
}

const CASES: readonly Case[] = [
  {
    title: 'a minimal site, failurePolicy defaulted (Ignore)',
    name: 'shop',
    namespace: 'shop',
    spec: {
      domains: ['shop.example.com'],
      upstream: { name: 'shop', port: 80 },
      tls: { issuerRef: { name: 'le' } },
    },
    options: EDGE_OPTIONS,
    failureModeAllow: true,
  },
  {
    title: 'a site with failurePolicy Fail, a captcha and a decider on port 9090',
    name: 'blog-eu',
    namespace: 'team-a',
    spec: {
      domains: ['blog.example.org', '*.blog.example.org'],
      upstream: { name: 'blog', port: 8080 },
      tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
      posture: 'Challenge',
      captcha: { provider: 'Turnstile', siteKey: '0x4AAAAAAAB_example', secretRef: { name: 'turnstile' } },
      filter: { failurePolicy: 'Fail', difficulty: 18, clearance: '30m' },
    },
    options: { ...EDGE_OPTIONS, deciderPort: 9090 },
    failureModeAllow: false,
  },
];

function site(c: Case): EdgeSite {
  return {
    ...EDGE_SITE,
    metadata: { name: c.name, namespace: c.namespace, uid: '0b5c8a4e-1f2d-4c3b-9a8e-7d6f5e4c3b2a' },
    spec: c.spec,
  };
}

/** The EnvoyFilter's spec as the apiserver stores it and istiod reads it: JSON. */
function renderedSpec(c: Case): JsonObject {
  const filter = extAuthzFilter(siteRef(site(c)), c.spec, c.options);
  return JSON.parse(JSON.stringify(filter.spec)) as JsonObject;
}

/** `configPatches[0]`, the only patch. */
function patchOf(c: Case): JsonObject {
  const patches = renderedSpec(c).configPatches as JsonObject[];
  assert.equal(patches.length, 1);
  return patches[0]!;
}

function typedConfig(c: Case): JsonObject {
  const value = (patchOf(c).patch as JsonObject).value as JsonObject;
  return value.typed_config as JsonObject;
}

const bySeverity = (findings: readonly ProtoFinding[], ...severities: ProtoFinding['severity'][]) =>
  findings.filter((f) => severities.includes(f.severity)).map((f) => `${f.path}: ${f.message}`);

/** A deep copy of `json` changed by `edit`. */
function edited(json: JsonObject, edit: (j: JsonObject) => void): JsonObject {
  const copy = structuredClone(json);
  edit(copy);
  return copy;
}

const httpService = (j: JsonObject) => j.http_service as JsonObject;
const serverUri = (j: JsonObject) => httpService(j).server_uri as JsonObject;

/** `outbound|<port>||<svc>.<ns>.svc.cluster.local`, Istio's name for a Service port's cluster. */
function parseCluster(cluster: string): { port: number; name: string; namespace: string } | undefined {
  const m =
    /^outbound\|(\d+)\|\|([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc\.cluster\.local$/.exec(
      cluster,
    );
  return m ? { port: Number(m[1]), name: m[2]!, namespace: m[4]! } : undefined;
}

describe("the ext_authz EnvoyFilter, validated against Envoy's published proto descriptors (go-control-plane), not a running Envoy", () => {
  it("loads ext_authz's descriptors only: its file and what it imports, not all of Envoy", () => {
    assert.ok(ENVOY.files.includes('envoy/extensions/filters/http/ext_authz/v3/ext_authz.proto'));
    assert.ok(ENVOY.files.includes('validate/validate.proto'), 'the validate rules are in the set');
    assert.ok(!ENVOY.files.some((f) => f.includes('http_connection_manager')), ENVOY.files.join(', '));
    assert.ok(ENVOY.files.length < 60, `${ENVOY.files.length} files`);
    assert.equal(ENVOY.root.lookupType(EXT_AUTHZ).fullName, `.${EXT_AUTHZ}`);
  });

  for (const c of CASES) {
    describe(`for ${c.title} (${c.namespace}/${c.name})`, () => {
      it('has a typed_config that is a valid ExtAuthz: strict proto3 JSON, Envoy’s validate rules, no unchecked rule', () => {
        const findings = ENVOY.check(ANY, typedConfig(c));
        assert.deepEqual(bySeverity(findings, 'error', 'unchecked'), []);
        assert.deepEqual(bySeverity(findings, 'warning'), [], 'no deprecated field either');
      });

      it('reads, as Envoy would, as an ExtAuthz with V3 transport, a 250 ms timeout and failure_mode_allow as failurePolicy says', () => {
        const { type, message } = ENVOY.unpackAny(typedConfig(c));
        assert.equal(type, EXT_AUTHZ);
        assert.equal(message.transport_api_version, 'V3');
        assert.equal(message.failure_mode_allow ?? false, c.failureModeAllow);
        const uri = ((message.http_service as JsonObject).server_uri as JsonObject).timeout as JsonObject;
        assert.deepEqual(
          { seconds: String(uri.seconds ?? '0'), nanos: uri.nanos },
          { seconds: '0', nanos: 250_000_000 },
        );
      });

      it('does not set allowed_headers twice, which Envoy’s ext_authz refuses ("Invalid duplicate configuration")', () => {
        const config = typedConfig(c);
        const inRequest = (httpService(config).authorization_request as JsonObject | undefined)
          ?.allowed_headers;
        assert.ok(!(config.allowed_headers !== undefined && inRequest !== undefined));
        assert.ok(
          config.allowed_headers !== undefined || inRequest !== undefined,
          'some request headers are allowed',
        );
      });

      it('inserts envoy.filters.http.ext_authz first in the Gateway’s HTTP filters, the payload typed by @type only', () => {
        const patch = patchOf(c);
        assert.equal(patch.applyTo, 'HTTP_FILTER');
        assert.deepEqual(patch.match, {
          context: 'GATEWAY',
          listener: { filterChain: { filter: { name: 'envoy.filters.network.http_connection_manager' } } },
        });
        const p = patch.patch as JsonObject;
        assert.equal(p.operation, 'INSERT_FIRST');
        const value = p.value as JsonObject;
        assert.deepEqual(Object.keys(value).sort(), ['name', 'typed_config']);
        assert.equal(value.name, 'envoy.filters.http.ext_authz');
        assert.equal(typedConfig(c)['@type'], EXT_AUTHZ_URL);
      });

      it('sends the check to the cluster Istio names for the decider Service, outbound|<port>||<svc>.<ns>.svc.cluster.local', () => {
        const service = deciderService(siteRef(site(c)), c.options);
        const ports = (service.spec as { ports: { port: number }[] }).ports;
        assert.equal(ports.length, 1);
        const expected = {
          port: ports[0]!.port,
          name: service.metadata.name,
          namespace: service.metadata.namespace,
        };
        const uri = serverUri(typedConfig(c));
        assert.deepEqual(parseCluster(String(uri.cluster)), expected);
        const url = new URL(String(uri.uri));
        assert.deepEqual(
          { port: Number(url.port), host: url.hostname },
          { port: expected.port, host: `${expected.name}.${expected.namespace}.svc.cluster.local` },
        );
      });
    });
  }

  describe('the checker itself', () => {
    const good = typedConfig(CASES[0]!);
    const errorsOf = (json: JsonObject) => bySeverity(ENVOY.check(ANY, json), 'error');

    it('rejects a misspelled field (failure_mode_alow)', () => {
      const bad = edited(good, (j) => {
        delete j.failure_mode_allow;
        j.failure_mode_alow = true;
      });
      assert.match(errorsOf(bad).join('\n'), /unknown field: "failure_mode_alow"/);
    });

    it('rejects a misspelled field deep inside (http_service.server_uri.timeout_ms)', () => {
      const bad = edited(good, (j) => {
        serverUri(j).timeout_ms = 250;
      });
      assert.match(errorsOf(bad).join('\n'), /HttpUri: unknown field: "timeout_ms"/);
    });

    it('rejects a timeout given as a number, or as "250ms": a Duration is "<seconds>s"', () => {
      for (const timeout of [0.25, '250ms']) {
        const bad = edited(good, (j) => {
          serverUri(j).timeout = timeout;
        });
        assert.match(
          errorsOf(bad).join('\n'),
          /google\.protobuf\.Duration: (expected duration string|invalid duration)/,
        );
      }
    });

    it('rejects an unknown enum name (transport_api_version V4) and a bool given as a string', () => {
      assert.match(
        errorsOf(
          edited(good, (j) => {
            j.transport_api_version = 'V4';
          }),
        ).join('\n'),
        /transport_api_version: unknown enum value: "V4"/,
      );
      assert.match(
        errorsOf(
          edited(good, (j) => {
            j.failure_mode_allow = 'true';
          }),
        ).join('\n'),
        /failure_mode_allow: expected boolean: "true"/,
      );
    });

    it('rejects an @type no descriptor defines, and an Any without @type is not an ExtAuthz', () => {
      const wrong = edited(good, (j) => {
        j['@type'] = `${EXT_AUTHZ_URL}Typo`;
      });
      assert.match(errorsOf(wrong).join('\n'), /no such type/i);
      const untyped = edited(good, (j) => void delete j['@type']);
      assert.deepEqual(errorsOf(untyped), [': an Any without @type: Envoy finds no type for it']);
      assert.throws(() => ENVOY.unpackAny(untyped), /an Any without @type/);
    });

    it('applies Envoy’s validate rules: a server_uri needs a timeout and a non-empty cluster; a pattern list is not empty', () => {
      const noTimeout = edited(good, (j) => void delete serverUri(j).timeout);
      assert.deepEqual(errorsOf(noTimeout), [`${IN}.http_service.server_uri.timeout: validate: required`]);
      const noCluster = edited(good, (j) => void delete serverUri(j).cluster);
      assert.deepEqual(errorsOf(noCluster), [
        `${IN}.http_service.server_uri.http_upstream_type: validate.required: one member of the oneof must be set`,
      ]);
      const emptyCluster = edited(good, (j) => {
        serverUri(j).cluster = '';
      });
      assert.deepEqual(errorsOf(emptyCluster), [
        `${IN}.http_service.server_uri.cluster: validate: length must be at least 1`,
      ]);
      const negative = edited(good, (j) => {
        serverUri(j).timeout = '-1s';
      });
      assert.match(
        errorsOf(negative).join('\n'),
        /server_uri\.timeout: validate: duration of -1000000000ns must be >= 0/,
      );
      const noPatterns = edited(good, (j) => {
        (httpService(j).authorization_response as JsonObject).allowed_upstream_headers = { patterns: [] };
      });
      assert.deepEqual(errorsOf(noPatterns), [
        `${IN}.http_service.authorization_response.allowed_upstream_headers.patterns: validate: at least 1 items`,
      ]);
    });

    it('warns of a deprecated field, and the replacement ExtAuthz.allowed_headers raises no warning', () => {
      const headers = { patterns: [{ exact: 'cookie' }] };
      const deprecated = edited(good, (j) => {
        delete j.allowed_headers;
        httpService(j).authorization_request = { allowed_headers: headers };
      });
      assert.deepEqual(
        ENVOY.check(ANY, deprecated).filter((f) => f.severity !== 'error'),
        [
          {
            severity: 'warning',
            path: `${IN}.http_service.authorization_request.allowed_headers`,
            message: 'deprecated (since API 3.0): Envoy accepts it with a deprecation warning',
          },
        ],
      );
      const replaced = edited(deprecated, (j) => {
        delete httpService(j).authorization_request;
        j.allowed_headers = headers;
      });
      assert.deepEqual(ENVOY.check(ANY, replaced), []);
    });

    it('warns of a deprecated enum value: transport_api_version V2', () => {
      const v2 = edited(good, (j) => {
        j.transport_api_version = 'V2';
      });
      assert.deepEqual(
        ENVOY.check(ANY, v2)
          .filter((f) => f.path === `${IN}.transport_api_version`)
          .map((f) => `${f.severity}: ${f.message}`),
        ['warning: enum value V2 is deprecated (since API 3.0): Envoy accepts it with a deprecation warning'],
      );
    });

    it('accepts the lowerCamelCase JSON names as Envoy does, and rejects a field given under both names', () => {
      const camel = edited(good, (j) => {
        j.failureModeAllow = j.failure_mode_allow;
        delete j.failure_mode_allow;
        httpService(j).pathPrefix = httpService(j).path_prefix;
        delete httpService(j).path_prefix;
      });
      assert.deepEqual(errorsOf(camel), []);
      const both = edited(good, (j) => {
        j.failureModeAllow = j.failure_mode_allow;
      });
      assert.match(errorsOf(both).join('\n'), /duplicate field/);
    });
  });
});
