/**
 * What an EdgeSite owns, without an apiserver: the seed's example site gives exactly the
 * objects written out here, with their names, in apply and delete order; each security
 * switch turned off removes exactly its object, by name; a shared site owns its route
 * alone; every object appears once, with a name a Kubernetes object may have; and, for
 * any combination of switches, the names are those of a rule written here (fast-check).
 * (The real CRDs' verdict on the same objects is edge-site-desired-crds.test.ts.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DNS_LABEL_REGEX, type KubeObject } from '@operators/kit';
import fc from 'fast-check';
import { EDGE_SITE, type EdgeSite, type EdgeSiteSpec, type Route } from '../src/api/edge-site.ts';
import {
  APPLY_ORDER,
  DELETE_ORDER,
  type DesiredSet,
  desiredObjects,
  FeatureReason,
  featuresFor,
  grpcRuleName,
  OwnedKind,
  SENSITIVE_FILE_SUFFIXES,
  SITE_CONFIG_KEY,
  shardAccessName,
} from '../src/domain/edge-site/index.ts';
import { EDGE_OPTIONS } from './support/edge-site-options.ts';
import { SEED_ROUTING } from './support/seed-site.ts';

const UID = '0b5c8a4e-1f2d-4c3b-9a8e-7d6f5e4c3b2a';

const OPTIONS = EDGE_OPTIONS;

/** The seed's example, as docs/exoledge.md writes it: / to docs, /app split 300/100. */
const SEED_SPEC: EdgeSiteSpec = {
  ...SEED_ROUTING,
  tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' }, secretName: 'shop-tls' },
  posture: 'Challenge',
  captcha: {
    provider: 'Turnstile',
    siteKey: '0x4AAAAAAAB_example',
    secretRef: { name: 'turnstile', key: 'secret' },
  },
  decider: { replicas: 2 },
  grpc: false,
  filter: { failurePolicy: 'Ignore', difficulty: 16, clearance: '1h' },
  security: {
    waf: true,
    challenge: true,
    sensitiveFiles: true,
    blocklists: ['proxies', 'cve-2024-3400'],
    allowlists: ['payment', 'crawlers'],
  },
};

/** A minimal autonomous site: what a team writes, before the apiserver's defaults. */
const MINIMAL_SPEC: EdgeSiteSpec = {
  domains: ['shop.example.com'],
  upstream: { name: 'shop', port: 80 },
  tls: { issuerRef: { name: 'letsencrypt' } },
};

function site(spec: EdgeSiteSpec, name = 'shop', namespace = 'shop'): EdgeSite {
  return { ...EDGE_SITE, metadata: { name, namespace, uid: UID }, spec };
}

const OWNER = {
  apiVersion: 'edge.exoledge.io/v1alpha1',
  kind: 'EdgeSite',
  name: 'shop',
  uid: UID,
  controller: true,
  blockOwnerDeletion: true,
};

const LABELS = { 'app.kubernetes.io/managed-by': 'exoledge', 'edge.exoledge.io/site': 'shop' };

/** `Kind/name` of each object, in the set's apply order. */
const applied = (set: DesiredSet): string[] => set.apply.map((o) => `${o.ref.kind}/${o.ref.name}`);

function objectNamed(set: DesiredSet, kind: string, name: string): KubeObject {
  const found = set.apply.find((o) => o.ref.kind === kind && o.ref.name === name);
  assert.ok(found, `no ${kind}/${name} in ${applied(set).join(', ')}`);
  return found.object;
}

function specOf(o: KubeObject): Record<string, unknown> {
  return o.spec as Record<string, unknown>;
}

describe('the objects of an autonomous EdgeSite', () => {
  const seed = desiredObjects(site(SEED_SPEC), OPTIONS);

  it("are, for the seed's example, these ten in this apply order: the decider first, the route last; no challenge WasmPlugin (the decider serves it)", () => {
    assert.deepEqual(applied(seed), [
      'ServiceAccount/shop-decider',
      'ConfigMap/shop-edge',
      'Deployment/shop-decider',
      'Service/shop-decider',
      'Certificate/shop-tls',
      'Gateway/shop',
      'EnvoyFilter/shop-ext-authz',
      'WasmPlugin/shop-waf',
      'AuthorizationPolicy/shop-deny-files',
      'HTTPRoute/shop',
    ]);
    assert.equal(seed.mode, 'Autonomous');
  });

  it('are deleted in the reverse of the apply order: the route first, so it is never live without its filters', () => {
    assert.deepEqual(
      seed.delete.map((r) => `${r.kind}/${r.name}`),
      [
        'HTTPRoute/shop',
        'AuthorizationPolicy/shop-deny-files',
        'WasmPlugin/shop-waf',
        'EnvoyFilter/shop-ext-authz',
        'Gateway/shop',
        'Certificate/shop-tls',
        'Service/shop-decider',
        'Deployment/shop-decider',
        'ConfigMap/shop-edge',
        'ServiceAccount/shop-decider',
      ],
    );
  });

  it('give the decider read access to ConfigMaps in the shard namespace, by a Role and binding found by label, with no owner', () => {
    const name = 'decider-shop-xoufmabktk';
    assert.equal(shardAccessName('shop', 'shop'), name);
    assert.equal(seed.shard.namespace, 'exoledge-system');
    assert.equal(
      seed.shard.selector,
      'app.kubernetes.io/managed-by=exoledge,edge.exoledge.io/site=shop,edge.exoledge.io/site-namespace=shop',
    );
    const labels = { ...LABELS, 'edge.exoledge.io/site-namespace': 'shop' };
    assert.deepEqual(
      seed.shard.apply.map((o) => o.object),
      [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name, namespace: 'exoledge-system', labels },
          rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name, namespace: 'exoledge-system', labels },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
          subjects: [{ kind: 'ServiceAccount', name: 'shop-decider', namespace: 'shop' }],
        },
      ],
    );
    assert.deepEqual(
      seed.shard.delete.map((r) => r.kind),
      ['RoleBinding', 'Role'],
    );
  });

  it('route /app to demo and demo-next weighted 300 and 100, and / to the upstream, rules sorted by prefix', () => {
    assert.deepEqual(objectNamed(seed, 'HTTPRoute', 'shop'), {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'shop', namespace: 'shop', labels: LABELS, ownerReferences: [OWNER] },
      spec: {
        parentRefs: [
          { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'shop', namespace: 'shop' },
        ],
        hostnames: ['shop.example.com', '*.shop.example.com'],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/' } }],
            backendRefs: [{ kind: 'Service', name: 'docs', port: 80, weight: 1 }],
          },
          {
            matches: [{ path: { type: 'PathPrefix', value: '/app' } }],
            backendRefs: [
              { kind: 'Service', name: 'demo', port: 80, weight: 300 },
              { kind: 'Service', name: 'demo-next', port: 80, weight: 100 },
            ],
          },
        ],
      },
    });
  });

  it('keep a drained origin (weight 0) as a backendRef of weight 0', () => {
    const routes: Route[] = [
      {
        prefix: '/app',
        upstreams: [
          { name: 'demo', port: 80, weight: 1 },
          { name: 'demo-next', port: 80, weight: 0 },
        ],
      },
    ];
    const set = desiredObjects(site({ ...SEED_SPEC, routes }), OPTIONS);
    assert.deepEqual(specOf(objectNamed(set, 'HTTPRoute', 'shop')).rules, [
      {
        matches: [{ path: { type: 'PathPrefix', value: '/app' } }],
        backendRefs: [
          { kind: 'Service', name: 'demo', port: 80, weight: 1 },
          { kind: 'Service', name: 'demo-next', port: 80, weight: 0 },
        ],
      },
    ]);
  });

  it('route everything to spec.upstream by one rule `/` when spec.routes is absent or empty', () => {
    for (const spec of [MINIMAL_SPEC, { ...MINIMAL_SPEC, routes: [] }]) {
      const set = desiredObjects(site(spec), OPTIONS);
      assert.deepEqual(specOf(objectNamed(set, 'HTTPRoute', 'shop')).rules, [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
          backendRefs: [{ kind: 'Service', name: 'shop', port: 80, weight: 1 }],
        },
      ]);
    }
  });

  it('give the same route whatever the order of spec.routes (longest prefix wins anyway)', () => {
    const reversed = desiredObjects(
      site({ ...SEED_SPEC, routes: [...(SEED_SPEC.routes ?? [])].reverse() }),
      OPTIONS,
    );
    assert.deepEqual(objectNamed(reversed, 'HTTPRoute', 'shop'), objectNamed(seed, 'HTTPRoute', 'shop'));
  });

  it('ask cert-manager for one certificate of every domain, in the Secret the listeners serve', () => {
    assert.deepEqual(specOf(objectNamed(seed, 'Certificate', 'shop-tls')), {
      secretName: 'shop-tls',
      dnsNames: ['shop.example.com', '*.shop.example.com'],
      issuerRef: { group: 'cert-manager.io', kind: 'ClusterIssuer', name: 'letsencrypt' },
    });
    const minimal = desiredObjects(site(MINIMAL_SPEC, 'blog'), OPTIONS);
    assert.deepEqual(specOf(objectNamed(minimal, 'Certificate', 'blog-tls')), {
      secretName: 'blog-tls',
      dnsNames: ['shop.example.com'],
      issuerRef: { group: 'cert-manager.io', kind: 'Issuer', name: 'letsencrypt' },
    });
  });

  it('terminate TLS on a Gateway of the operator class, one HTTPS listener per domain', () => {
    const tls = { mode: 'Terminate', certificateRefs: [{ kind: 'Secret', name: 'shop-tls' }] };
    const allowedRoutes = { namespaces: { from: 'Same' } };
    assert.deepEqual(specOf(objectNamed(seed, 'Gateway', 'shop')), {
      gatewayClassName: 'istio',
      listeners: [
        { name: 'https-0', hostname: 'shop.example.com', port: 443, protocol: 'HTTPS', tls, allowedRoutes },
        { name: 'https-1', hostname: '*.shop.example.com', port: 443, protocol: 'HTTPS', tls, allowedRoutes },
      ],
    });
  });

  it("send every request first to the decider's ext_authz cluster outbound|8080||shop-decider.shop.svc.cluster.local, on the site's Gateway only", () => {
    const filter = specOf(objectNamed(seed, 'EnvoyFilter', 'shop-ext-authz'));
    assert.deepEqual(filter, {
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'shop' }],
      configPatches: [
        {
          applyTo: 'HTTP_FILTER',
          match: {
            context: 'GATEWAY',
            listener: { filterChain: { filter: { name: 'envoy.filters.network.http_connection_manager' } } },
          },
          patch: {
            operation: 'INSERT_FIRST',
            value: {
              name: 'envoy.filters.http.ext_authz',
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz',
                transport_api_version: 'V3',
                failure_mode_allow: true,
                allowed_headers: {
                  patterns: [{ exact: 'cookie' }, { exact: 'user-agent' }, { exact: 'x-forwarded-for' }],
                },
                http_service: {
                  server_uri: {
                    uri: 'http://shop-decider.shop.svc.cluster.local:8080',
                    cluster: 'outbound|8080||shop-decider.shop.svc.cluster.local',
                    timeout: '0.25s',
                  },
                  path_prefix: '/v1/verdict',
                  authorization_response: {
                    allowed_upstream_headers: { patterns: [{ prefix: 'x-exoledge-' }] },
                    allowed_client_headers: {
                      patterns: [
                        { exact: 'content-type' },
                        { exact: 'cache-control' },
                        { exact: 'set-cookie' },
                        { exact: 'location' },
                        { exact: 'retry-after' },
                      ],
                    },
                  },
                },
              },
            },
          },
        },
      ],
    });
  });

  it('let requests through when the decider fails with failurePolicy Ignore, and refuse them with Fail', () => {
    const failureModeAllow = (spec: EdgeSiteSpec): unknown => {
      const f = specOf(objectNamed(desiredObjects(site(spec), OPTIONS), 'EnvoyFilter', 'shop-ext-authz'));
      return JSON.parse(JSON.stringify(f)).configPatches[0].patch.value.typed_config.failure_mode_allow;
    };
    assert.equal(failureModeAllow(SEED_SPEC), true);
    assert.equal(failureModeAllow(MINIMAL_SPEC), true, 'Ignore is the default');
    assert.equal(failureModeAllow({ ...SEED_SPEC, filter: { failurePolicy: 'Fail' } }), false);
  });

  it('read the client address header the operator names in the check, and no other client-set header', () => {
    const headers = (options: typeof OPTIONS): unknown => {
      const f = specOf(
        objectNamed(desiredObjects(site(SEED_SPEC), options), 'EnvoyFilter', 'shop-ext-authz'),
      );
      return JSON.parse(JSON.stringify(f)).configPatches[0].patch.value.typed_config.allowed_headers.patterns;
    };
    assert.deepEqual(headers({ ...OPTIONS, clientAddressHeader: 'cf-connecting-ip' }), [
      { exact: 'cookie' },
      { exact: 'user-agent' },
      { exact: 'x-forwarded-for' },
      { exact: 'cf-connecting-ip' },
    ]);
  });

  it('serve the WAF (Coraza + CRS) as a WasmPlugin', () => {
    const targetRefs = [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'shop' }];
    assert.deepEqual(specOf(objectNamed(seed, 'WasmPlugin', 'shop-waf')), {
      targetRefs,
      url: 'oci://ghcr.io/corazawaf/coraza-proxy-wasm:0.6.0',
      phase: 'AUTHZ',
      type: 'HTTP',
      failStrategy: 'FAIL_OPEN',
      pluginConfig: {
        directives_map: {
          default: [
            'Include @recommended-conf',
            'Include @crs-setup-conf',
            'Include @owasp_crs/*.conf',
            'SecRuleEngine On',
          ],
        },
        default_directives: 'default',
      },
    });
  });

  it('deny the 93 sensitive-file suffixes by an AuthorizationPolicy DENY of `*<suffix>` paths', () => {
    const policy = specOf(objectNamed(seed, 'AuthorizationPolicy', 'shop-deny-files'));
    const paths = SENSITIVE_FILE_SUFFIXES.map((s) => `*${s}`);
    assert.equal(paths.length, 93);
    assert.ok(paths.includes('*/.env') && paths.includes('*/.git/config') && paths.includes('*.sql'));
    assert.deepEqual(policy, {
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'shop' }],
      action: 'DENY',
      rules: [{ to: [{ operation: { paths } }] }],
    });
  });

  it('write the decider configuration with the captcha secret named, never copied', () => {
    const cm = objectNamed(seed, 'ConfigMap', 'shop-edge') as KubeObject & { data: Record<string, string> };
    assert.deepEqual(Object.keys(cm.data), [SITE_CONFIG_KEY]);
    assert.deepEqual(JSON.parse(cm.data[SITE_CONFIG_KEY] ?? ''), {
      posture: 'Challenge',
      captcha: {
        provider: 'Turnstile',
        siteKey: '0x4AAAAAAAB_example',
        secretRef: { name: 'turnstile', key: 'secret' },
      },
      upstream: { name: 'docs', port: 80 },
      filter: { failurePolicy: 'Ignore', difficulty: 16, clearance: '1h' },
      challenge: true,
      blocklists: { kind: 'Named', names: ['proxies', 'cve-2024-3400'] },
      allowlists: ['payment', 'crawlers'],
    });
    const minimal = desiredObjects(site(MINIMAL_SPEC), OPTIONS);
    const text = (
      objectNamed(minimal, 'ConfigMap', 'shop-edge') as KubeObject & { data: Record<string, string> }
    ).data[SITE_CONFIG_KEY];
    assert.deepEqual(JSON.parse(text ?? ''), {
      posture: 'Challenge',
      upstream: { name: 'shop', port: 80 },
      filter: { failurePolicy: 'Ignore', difficulty: 16, clearance: '1h' },
      challenge: true,
      blocklists: { kind: 'AllPresumed' },
      allowlists: [],
    });
  });

  it('run the decider hardened: read-only root, /tmp emptyDir, non-root, no capability, seccomp, probes on 8080', () => {
    const deployment = objectNamed(seed, 'Deployment', 'shop-decider');
    const spec = JSON.parse(JSON.stringify(deployment.spec));
    assert.equal(spec.replicas, 2);
    assert.deepEqual(spec.selector, {
      matchLabels: { 'app.kubernetes.io/name': 'exoledge-decider', 'edge.exoledge.io/site': 'shop' },
    });
    const pod = spec.template.spec;
    assert.equal(pod.serviceAccountName, 'shop-decider');
    assert.deepEqual(pod.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    assert.equal(pod.containers.length, 1);
    const [c] = pod.containers;
    assert.equal(c.image, 'rg.fr-par.scw.cloud/exoledge/decider:0.1.1');
    assert.deepEqual(c.ports, [{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    assert.deepEqual(c.readinessProbe, { httpGet: { path: '/readyz', port: 'http' } });
    assert.deepEqual(c.livenessProbe, { httpGet: { path: '/healthz', port: 'http' } });
    assert.deepEqual(c.securityContext, {
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    assert.deepEqual(c.env, [
      { name: 'EXOLEDGE_SITE_NAMESPACE', value: 'shop' },
      { name: 'EXOLEDGE_SITE', value: 'shop' },
      { name: 'EXOLEDGE_SITE_CONFIGMAP', value: 'shop-edge' },
      { name: 'EXOLEDGE_SITE_CONFIG', value: '/etc/exoledge/site/config.json' },
      { name: 'EXOLEDGE_SHARD_NAMESPACE', value: 'exoledge-system' },
      { name: 'EXOLEDGE_ALLOWLISTS_DIR', value: '/etc/exoledge/allowlists' },
      { name: 'EXOLEDGE_LISTEN', value: ':8080' },
      { name: 'EXOLEDGE_VALKEY_URL', value: 'redis://valkey.exoledge-system.svc:6379' },
      { name: 'EXOLEDGE_TRUSTED_HOPS', value: '0' },
      {
        name: 'EXOLEDGE_SIGNING_KEYS',
        valueFrom: { secretKeyRef: { name: 'shop-decider-signing-key', key: 'keys', optional: true } },
      },
      { name: 'NODE_OPTIONS', value: '--max-semi-space-size=8' },
      { name: 'EXOLEDGE_CAPTCHA_SECRET', valueFrom: { secretKeyRef: { name: 'turnstile', key: 'secret' } } },
    ]);
    assert.deepEqual(c.volumeMounts, [
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'site-config', mountPath: '/etc/exoledge/site', readOnly: true },
      { name: 'allowlist-0', mountPath: '/etc/exoledge/allowlists/payment', readOnly: true },
      { name: 'allowlist-1', mountPath: '/etc/exoledge/allowlists/crawlers', readOnly: true },
    ]);
    assert.deepEqual(pod.volumes, [
      { name: 'tmp', emptyDir: {} },
      { name: 'site-config', configMap: { name: 'shop-edge' } },
      { name: 'allowlist-0', configMap: { name: 'payment', optional: true } },
      { name: 'allowlist-1', configMap: { name: 'crawlers', optional: true } },
    ]);

    const minimal = desiredObjects(site(MINIMAL_SPEC), OPTIONS);
    const m = JSON.parse(JSON.stringify(objectNamed(minimal, 'Deployment', 'shop-decider').spec));
    assert.equal(m.replicas, 2, 'two replicas when spec.decider is absent');
    assert.ok(
      !m.template.spec.containers[0].env.some((e: { name: string }) => e.name === 'EXOLEDGE_CAPTCHA_SECRET'),
    );
  });

  it('keep the decider pods when the posture changes (the decider reloads the mounted file), roll them for a new allowlist volume', () => {
    const template = (spec: EdgeSiteSpec): unknown =>
      JSON.parse(
        JSON.stringify(objectNamed(desiredObjects(site(spec), OPTIONS), 'Deployment', 'shop-decider').spec),
      ).template;
    assert.deepEqual(template({ ...SEED_SPEC, posture: 'Strict' }), template(SEED_SPEC));
    assert.notDeepEqual(
      template({ ...SEED_SPEC, security: { ...SEED_SPEC.security, allowlists: ['monitors'] } }),
      template(SEED_SPEC),
    );
  });

  it('give the decider no Valkey when the operator has none, and the trusted hops it was told', () => {
    const env = (options: typeof OPTIONS): unknown =>
      JSON.parse(
        JSON.stringify(
          objectNamed(desiredObjects(site(SEED_SPEC), options), 'Deployment', 'shop-decider').spec,
        ),
      ).template.spec.containers[0].env.filter((e: { name: string }) =>
        ['EXOLEDGE_VALKEY_URL', 'EXOLEDGE_TRUSTED_HOPS'].includes(e.name),
      );
    assert.deepEqual(env({ ...OPTIONS, valkeyUrl: undefined, trustedHops: 2 }), [
      { name: 'EXOLEDGE_TRUSTED_HOPS', value: '2' },
    ]);
  });

  it('expose the decider on a ClusterIP Service, port 8080 named http', () => {
    assert.deepEqual(specOf(objectNamed(seed, 'Service', 'shop-decider')), {
      type: 'ClusterIP',
      selector: { 'app.kubernetes.io/name': 'exoledge-decider', 'edge.exoledge.io/site': 'shop' },
      ports: [{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP', appProtocol: 'http' }],
    });
  });

  it('label every object and make the EdgeSite (by its uid) their controller', () => {
    for (const { object } of seed.apply) {
      const what = `${object.kind}/${object.metadata.name}`;
      assert.equal(object.metadata.namespace, 'shop', what);
      assert.deepEqual(object.metadata.ownerReferences, [OWNER], what);
      for (const [k, v] of Object.entries(LABELS)) assert.equal(object.metadata.labels?.[k], v, what);
    }
  });

  it('upgrade connections to every upstream Service to HTTP/2 with grpc, from the site gateway only', () => {
    const set = desiredObjects(site({ ...SEED_SPEC, grpc: true }), OPTIONS);
    const rules = set.apply.filter((o) => o.ref.kind === 'DestinationRule');
    assert.deepEqual(
      rules.map((r) => r.object.spec),
      ['demo', 'demo-next', 'docs']
        .map((svc) => ({
          name: grpcRuleName('shop', svc),
          spec: {
            host: `${svc}.shop.svc.cluster.local`,
            workloadSelector: { matchLabels: { 'gateway.networking.k8s.io/gateway-name': 'shop' } },
            trafficPolicy: { connectionPool: { http: { h2UpgradePolicy: 'UPGRADE' } } },
          },
        }))
        .sort((a, b) => (a.name < b.name ? -1 : 1))
        .map((r) => r.spec),
    );
    for (const r of rules) assert.match(r.ref.name, /^shop-grpc-[0-9a-z]{5}$/);
    assert.deepEqual(rules.map((r) => r.object.metadata.labels?.['edge.exoledge.io/upstream']).sort(), [
      'demo',
      'demo-next',
      'docs',
    ]);
    assert.deepEqual(applied(set).at(-1), 'HTTPRoute/shop', 'the route is still last');
    assert.ok(!applied(seed).some((n) => n.startsWith('DestinationRule/')), 'none without grpc');
  });
});

describe('a security switch turned off', () => {
  const all = new Set(applied(desiredObjects(site(SEED_SPEC), OPTIONS)));
  const cases = [
    ['waf', 'WasmPlugin/shop-waf'],
    ['sensitiveFiles', 'AuthorizationPolicy/shop-deny-files'],
  ] as const;
  for (const [flag, removed] of cases) {
    it(`${flag}: removes ${removed} and nothing else`, () => {
      const spec = { ...SEED_SPEC, security: { ...SEED_SPEC.security, [flag]: false } };
      const names = new Set(applied(desiredObjects(site(spec), OPTIONS)));
      assert.deepEqual(
        [...all].filter((n) => !names.has(n)),
        [removed],
      );
      assert.deepEqual(
        [...names].filter((n) => !all.has(n)),
        [],
      );
    });
  }

  it('challenge: removes no object, and tells the decider (its configuration) to serve no proof-of-work', () => {
    const off = desiredObjects(site({ ...SEED_SPEC, security: { challenge: false } }), OPTIONS);
    assert.deepEqual(applied(off), applied(desiredObjects(site(SEED_SPEC), OPTIONS)));
    const config = JSON.parse(
      String((objectNamed(off, 'ConfigMap', 'shop-edge').data as Record<string, string>)['config.json']),
    );
    assert.equal(config.challenge, false);
  });

  it('is the only way to remove its object: an absent switch is on', () => {
    assert.deepEqual(
      applied(desiredObjects(site(MINIMAL_SPEC), OPTIONS)).filter((n) =>
        /WasmPlugin|AuthorizationPolicy/.test(n),
      ),
      ['WasmPlugin/shop-waf', 'AuthorizationPolicy/shop-deny-files'],
    );
  });

  it('is reported by featuresFor with its reason, as are grpc not asked for and no blocklist selected', () => {
    const spec: EdgeSiteSpec = { ...SEED_SPEC, security: { waf: false, blocklists: [] } };
    assert.deepEqual(featuresFor(site(spec)), [
      { name: 'waf', wanted: false, carried: false, reason: FeatureReason.TurnedOff },
      { name: 'challenge', wanted: true, carried: true },
      { name: 'sensitiveFiles', wanted: true, carried: true },
      { name: 'blocklists', wanted: false, carried: false, reason: FeatureReason.NoListSelected },
      { name: 'grpc', wanted: false, carried: false, reason: FeatureReason.NotRequested },
    ]);
  });
});

describe('a site on a shared gateway (gatewayRef)', () => {
  const shared: EdgeSiteSpec = {
    domains: ['shop.example.com'],
    upstream: { name: 'shop', port: 80 },
    gatewayRef: { name: 'edge', namespace: 'edge-system' },
    grpc: true,
    security: { waf: true, challenge: false },
  };

  it('owns only its HTTPRoute, attached to that Gateway', () => {
    const set = desiredObjects(site(shared), OPTIONS);
    assert.equal(set.mode, 'Shared');
    assert.deepEqual(applied(set), ['HTTPRoute/shop']);
    assert.deepEqual(
      set.delete.map((r) => `${r.kind}/${r.name}`),
      ['HTTPRoute/shop'],
    );
    assert.deepEqual(set.shard.apply, []);
    assert.deepEqual(set.shard.delete, []);
    const route = objectNamed(set, 'HTTPRoute', 'shop');
    assert.deepEqual(route.metadata.ownerReferences, [OWNER]);
    assert.deepEqual(specOf(route).parentRefs, [
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge', namespace: 'edge-system' },
    ]);
  });

  it("attaches to a Gateway of the site's namespace when gatewayRef has no namespace", () => {
    const set = desiredObjects(site({ ...shared, gatewayRef: { name: 'edge' } }), OPTIONS);
    assert.deepEqual(specOf(objectNamed(set, 'HTTPRoute', 'shop')).parentRefs, [
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge', namespace: 'shop' },
    ]);
  });

  it('still has a shard selector, for the controller to clean what an autonomous past left', () => {
    const set = desiredObjects(site(shared), OPTIONS);
    assert.equal(set.shard.namespace, 'exoledge-system');
    assert.match(set.shard.selector, /edge\.exoledge\.io\/site=shop/);
  });

  it('reports every function as carried by the shared edge, whatever its switches say', () => {
    assert.deepEqual(featuresFor(site(shared)), [
      { name: 'waf', wanted: true, carried: false, reason: FeatureReason.CarriedBySharedEdge },
      { name: 'challenge', wanted: false, carried: false, reason: FeatureReason.CarriedBySharedEdge },
      { name: 'sensitiveFiles', wanted: true, carried: false, reason: FeatureReason.CarriedBySharedEdge },
      { name: 'blocklists', wanted: true, carried: false, reason: FeatureReason.CarriedBySharedEdge },
      { name: 'grpc', wanted: true, carried: false, reason: FeatureReason.CarriedBySharedEdge },
    ]);
    assert.equal(FeatureReason.CarriedBySharedEdge, 'CarriedBySharedEdge');
  });
});

describe('the orders and names', () => {
  it('place every owned kind once in the apply order and once in the delete order', () => {
    const kinds = Object.values(OwnedKind).sort();
    assert.deepEqual([...APPLY_ORDER].sort(), kinds);
    assert.deepEqual([...DELETE_ORDER].sort(), kinds);
  });

  it('are refused for a site read without a uid: its objects need it for their owner reference', () => {
    const noUid: EdgeSite = { ...EDGE_SITE, metadata: { name: 'shop', namespace: 'shop' }, spec: SEED_SPEC };
    assert.throws(() => desiredObjects(noUid, OPTIONS), /uid/);
  });

  it('stay DNS labels of at most 63 characters for a 52-character site with long Service names', () => {
    const name = `s${'a-b'.repeat(17)}`;
    assert.equal(name.length, 52);
    const namespace = 'n'.repeat(63);
    const svc = `x${'y'.repeat(62)}`;
    const spec: EdgeSiteSpec = {
      ...SEED_SPEC,
      grpc: true,
      routes: [{ prefix: '/', upstreams: [{ name: svc, port: 80 }] }],
    };
    const set = desiredObjects(site(spec, name, namespace), OPTIONS);
    const names = [...set.apply, ...set.shard.apply].map((o) => o.ref.name);
    assert.equal(names.length, 13);
    for (const n of names) {
      assert.ok(n.length <= 63, `${n} is ${n.length} characters`);
      assert.match(n, new RegExp(DNS_LABEL_REGEX), n);
      assert.match(n, /^[a-z]/, `${n} is a DNS-1035 label too (a Service name)`);
    }
  });
});

// ---------------------------------------------------------------------------------------
// The property: for any switches, the names are those of this rule.

/** The rule, written independently of the planner: what a site with these switches owns. */
function expectedNames(name: string, spec: EdgeSiteSpec): string[] {
  if (spec.gatewayRef) return ['HTTPRoute/' + name];
  const s = spec.security ?? {};
  const services = new Set(
    spec.routes === undefined || spec.routes.length === 0
      ? [spec.upstream.name]
      : spec.routes.flatMap((r) => (r.upstreams ?? [spec.upstream]).map((u) => u.name)),
  );
  return [
    `ServiceAccount/${name}-decider`,
    `ConfigMap/${name}-edge`,
    `Deployment/${name}-decider`,
    `Service/${name}-decider`,
    `Certificate/${name}-tls`,
    `Gateway/${name}`,
    `EnvoyFilter/${name}-ext-authz`,
    `HTTPRoute/${name}`,
    ...(s.waf === false ? [] : [`WasmPlugin/${name}-waf`]),
    ...(s.sensitiveFiles === false ? [] : [`AuthorizationPolicy/${name}-deny-files`]),
    ...(spec.grpc === true ? [...services].map((svc) => `DestinationRule/${grpcRuleName(name, svc)}`) : []),
  ];
}

describe('for any switches (fast-check)', () => {
  const aSwitch = fc.option(fc.boolean(), { nil: undefined });
  const siteName = fc.stringMatching(/^[a-z]([-a-z0-9]{0,50}[a-z0-9])?$/);
  const service = fc.constantFrom('docs', 'demo', 'demo-next', 'api');
  const routes: fc.Arbitrary<Route[] | undefined> = fc.option(
    fc.uniqueArray(
      fc.record(
        {
          prefix: fc.constantFrom('/', '/app', '/api', '/docs'),
          upstreams: fc.uniqueArray(
            fc.record({ name: service, port: fc.constant(80), weight: fc.integer({ min: 0, max: 1000 }) }),
            { minLength: 1, maxLength: 3, selector: (u) => u.name },
          ),
        },
        { requiredKeys: ['prefix'] },
      ),
      { maxLength: 4, selector: (r) => r.prefix },
    ),
    { nil: undefined },
  );
  const spec: fc.Arbitrary<EdgeSiteSpec> = fc
    .record({
      waf: aSwitch,
      challenge: aSwitch,
      sensitiveFiles: aSwitch,
      grpc: aSwitch,
      shared: fc.boolean(),
      routes,
      upstream: service,
    })
    .map(
      (a): EdgeSiteSpec => ({
        domains: ['shop.example.com'],
        upstream: { name: a.upstream, port: 80 },
        ...(a.routes ? { routes: a.routes } : {}),
        ...(a.grpc === undefined ? {} : { grpc: a.grpc }),
        ...(a.shared ? { gatewayRef: { name: 'edge' } } : { tls: { issuerRef: { name: 'letsencrypt' } } }),
        security: {
          ...(a.waf === undefined ? {} : { waf: a.waf }),
          ...(a.challenge === undefined ? {} : { challenge: a.challenge }),
          ...(a.sensitiveFiles === undefined ? {} : { sensitiveFiles: a.sensitiveFiles }),
        },
      }),
    );

  it('the names are exactly those of the rule, each object once, each name a DNS label within 63', () => {
    fc.assert(
      fc.property(siteName, spec, (name, s) => {
        const set = desiredObjects(site(s, name, 'team-a'), OPTIONS);
        const names = applied(set);
        assert.deepEqual([...names].sort(), expectedNames(name, s).sort());
        assert.equal(new Set(names).size, names.length, 'each object once');
        assert.deepEqual(
          set.delete.map((r) => `${r.kind}/${r.name}`).sort(),
          [...names].sort(),
          'apply and delete list the same objects',
        );
        for (const o of [...set.apply, ...set.shard.apply]) {
          assert.ok(o.ref.name.length <= 63 && new RegExp(DNS_LABEL_REGEX).test(o.ref.name), o.ref.name);
        }
        assert.equal(set.shard.apply.length, s.gatewayRef ? 0 : 2);
      }),
      { numRuns: 300 },
    );
  });

  it('the objects present are exactly those of the functions featuresFor says the site carries', () => {
    fc.assert(
      fc.property(spec, (s) => {
        const set = desiredObjects(site(s), OPTIONS);
        const carried = new Set(featuresFor(site(s)).flatMap((f) => (f.carried ? [f.name] : [])));
        const names = applied(set);
        assert.equal(names.includes('WasmPlugin/shop-waf'), carried.has('waf'));
        // The challenge is the decider's: its configuration says whether it serves one.
        const config = JSON.parse(
          String(
            (
              set.apply.find((o) => o.ref.kind === 'ConfigMap')?.object.data as
                | Record<string, string>
                | undefined
            )?.['config.json'] ?? '{}',
          ),
        );
        if (!s.gatewayRef) assert.equal(config.challenge, carried.has('challenge'));
        assert.equal(names.includes('AuthorizationPolicy/shop-deny-files'), carried.has('sensitiveFiles'));
        assert.equal(
          names.some((n) => n.startsWith('DestinationRule/')),
          carried.has('grpc'),
        );
      }),
      { numRuns: 300 },
    );
  });
});
