/**
 * `status.origins` of an EdgeSite, from the EndpointSlices and Services of its namespace.
 * Every expected value is written out. The property checks the count against a naive
 * counter written here from the rule in words: the slices labelled with the Service that
 * carry the Service port's name; per address family, the distinct first addresses, ready
 * when some copy is neither `ready: false` nor terminating; the family with the most ready
 * ones. Pure.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { EdgeSite, EdgeSiteSpec, OriginStatus } from '../src/api/edge-site.ts';
import { OriginReason } from '../src/domain/edge-site/origin-reasons.ts';
import {
  declaredOrigins,
  type EndpointConditions,
  type EndpointSlice,
  type EndpointSliceEndpoint,
  type EndpointSlicePort,
  endpointSliceSites,
  originReports,
  originsOf,
  type Service,
  type ServicePort,
  serviceSites,
} from '../src/domain/edge-site/origins.ts';

const NS = 'shop';

/** An entry without its message: the cases below state the message apart, on the report. */
function bare(status: OriginStatus | undefined): Omit<OriginStatus, 'message'> | undefined {
  if (status === undefined) return undefined;
  const { message: _, ...rest } = status;
  return rest;
}

const bareOrigins = (...args: Parameters<typeof originsOf>) => originsOf(...args).map((o) => bare(o)!);

function site(spec: Omit<EdgeSiteSpec, 'domains'>, name = 'shop', namespace = NS): EdgeSite {
  return {
    apiVersion: 'edge.exoledge.io/v1alpha1',
    kind: 'EdgeSite',
    metadata: { name, namespace },
    spec: { domains: ['shop.example.com'], ...spec },
  };
}

/** A Service whose port 80, named http, sends to the Pods' 8080. */
function service(
  name: string,
  ports: readonly ServicePort[] = [{ name: 'http', port: 80, targetPort: 8080 }],
): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: NS }, spec: { ports } };
}

/** A slice of `serviceName` carrying the port `http` (target 8080) unless told otherwise. */
function slice(
  name: string,
  serviceName: string,
  endpoints: readonly EndpointSliceEndpoint[] | null,
  opts: { addressType?: string; ports?: readonly EndpointSlicePort[] | null; namespace?: string } = {},
): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace: opts.namespace ?? NS,
      labels: { 'kubernetes.io/service-name': serviceName },
    },
    addressType: opts.addressType ?? 'IPv4',
    endpoints,
    ports: opts.ports === undefined ? [{ name: 'http', port: 8080, protocol: 'TCP' }] : opts.ports,
  };
}

const ready = (address: string): EndpointSliceEndpoint => ({
  addresses: [address],
  conditions: { ready: true, serving: true, terminating: false },
});
const notReady = (address: string): EndpointSliceEndpoint => ({
  addresses: [address],
  conditions: { ready: false, serving: false, terminating: false },
});
const terminating = (address: string, stillReady: boolean | undefined): EndpointSliceEndpoint => ({
  addresses: [address],
  conditions: { ready: stillReady, serving: true, terminating: true },
});

/** One origin, `/` to `demo` port 80. */
const single = site({ upstream: { name: 'demo', port: 80 } });

describe('EdgeSite origins: counting ready endpoints', () => {
  it('counts 0, 1 and 3 ready endpoints', () => {
    const s = site({
      upstream: { name: 'zero', port: 80 },
      routes: [
        { prefix: '/zero' },
        { prefix: '/one', upstreams: [{ name: 'one', port: 80, weight: 1 }] },
        { prefix: '/three', upstreams: [{ name: 'three', port: 80, weight: 1 }] },
      ],
    });
    const slices = [
      slice('zero-a', 'zero', [notReady('10.0.0.1'), notReady('10.0.0.2')]),
      slice('one-a', 'one', [ready('10.0.1.1'), notReady('10.0.1.2')]),
      slice('three-a', 'three', [ready('10.0.3.1'), ready('10.0.3.2'), ready('10.0.3.3')]),
    ];
    const services = [service('zero'), service('one'), service('three')];
    assert.deepEqual(bareOrigins(s, slices, services), [
      { prefix: '/one', name: 'one', port: 80, weight: 1, readyEndpoints: 1 },
      { prefix: '/three', name: 'three', port: 80, weight: 1, readyEndpoints: 3 },
      { prefix: '/zero', name: 'zero', port: 80, weight: 1, readyEndpoints: 0, reason: 'NoReadyEndpoints' },
    ]);
    const zero = originReports(s, slices, services)[2];
    assert.equal(zero?.notReadyEndpoints, 2);
    assert.equal(
      zero?.message,
      'route /zero, Service zero port 80: no ready endpoint (2 not ready: starting, failing readiness, or terminating)',
    );
  });

  it("carries each reason's message in the status, for a reader of the EdgeSite: a code alone names no Service", () => {
    const s = site({
      upstream: { name: 'gone', port: 80 },
      routes: [{ prefix: '/' }, { prefix: '/old', upstreams: [{ name: 'one', port: 80, weight: 0 }] }],
    });
    const [missing, drained] = originsOf(s, [slice('one-a', 'one', [ready('10.0.1.1')])], [service('one')]);
    assert.equal(drained?.reason, 'Drained');
    assert.match(drained?.message ?? '', /^route \/old, Service one port 80: drained \(weight 0\)/);
    assert.equal(missing?.reason, 'ServiceNotFound');
    assert.match(
      missing?.message ?? '',
      /^route \/, Service gone port 80: no such Service in the site's namespace/,
    );
    for (const r of originReports(s, [], [])) assert.equal(r.status.message, r.message);
  });

  it('counts an endpoint whose ready condition is nil as ready, as the API says', () => {
    const slices = [
      slice('demo-a', 'demo', [
        { addresses: ['10.0.0.1'] },
        { addresses: ['10.0.0.2'], conditions: {} },
        { addresses: ['10.0.0.3'], conditions: { ready: null } as EndpointConditions },
      ]),
    ];
    assert.deepEqual(bareOrigins(single, slices, [service('demo')]), [
      { prefix: '/', name: 'demo', port: 80, weight: 1, readyEndpoints: 3 },
    ]);
  });

  it('counts an address held by two slices once (a Service split over slices, or a rollover)', () => {
    const slices = [
      slice('demo-a', 'demo', [ready('10.0.0.1'), ready('10.0.0.2')]),
      slice('demo-b', 'demo', [ready('10.0.0.2'), ready('10.0.0.3')]),
    ];
    assert.deepEqual(bareOrigins(single, slices, [service('demo')]), [
      { prefix: '/', name: 'demo', port: 80, weight: 1, readyEndpoints: 3 },
    ]);
  });

  it('counts an address ready when one of its copies is, and not ready only when none is', () => {
    const slices = [
      slice('demo-old', 'demo', [notReady('10.0.0.1'), notReady('10.0.0.2')]),
      slice('demo-new', 'demo', [ready('10.0.0.1')]),
    ];
    const [report] = originReports(single, slices, [service('demo')]);
    assert.equal(report?.status.readyEndpoints, 1);
    assert.equal(report?.notReadyEndpoints, 1);
  });

  it('does not count terminating endpoints as ready, even when ready stays true or nil', () => {
    const slices = [
      slice('demo-a', 'demo', [
        terminating('10.0.0.1', false),
        terminating('10.0.0.2', true),
        terminating('10.0.0.3', undefined),
        ready('10.0.0.4'),
      ]),
    ];
    const [report] = originReports(single, slices, [service('demo')]);
    assert.deepEqual(bare(report?.status), {
      prefix: '/',
      name: 'demo',
      port: 80,
      weight: 1,
      readyEndpoints: 1,
    });
    assert.equal(report?.notReadyEndpoints, 3);
  });

  it('counts a dual-stack Service by family, not twice: the same Pods under IPv4 and IPv6', () => {
    const slices = [
      slice('demo-v4', 'demo', [ready('10.0.0.1'), ready('10.0.0.2')]),
      slice('demo-v6', 'demo', [ready('fd00::1'), ready('fd00::2')], { addressType: 'IPv6' }),
    ];
    assert.deepEqual(bareOrigins(single, slices, [service('demo')]), [
      { prefix: '/', name: 'demo', port: 80, weight: 1, readyEndpoints: 2 },
    ]);
  });

  it('reads null endpoints and ports as none, as the API may send them', () => {
    const slices = [
      slice('demo-a', 'demo', null),
      slice('demo-b', 'demo', [ready('10.0.0.1')], { ports: null }),
    ];
    assert.deepEqual(bareOrigins(single, slices, [service('demo')]), [
      {
        prefix: '/',
        name: 'demo',
        port: 80,
        weight: 1,
        readyEndpoints: 0,
        reason: 'NoReadyEndpoints',
      },
    ]);
    assert.equal(
      originReports(single, slices, [service('demo')])[0]?.message,
      'route /, Service demo port 80: no endpoint on this port: its selector matches no Pod, or none serves the port',
    );
  });

  it('ignores slices of other Services and other namespaces', () => {
    const slices = [
      slice('demo-a', 'demo', [ready('10.0.0.1')]),
      slice('other-a', 'other', [ready('10.0.0.2')]),
      slice('demo-x', 'demo', [ready('10.0.0.3')], { namespace: 'elsewhere' }),
    ];
    assert.deepEqual(bareOrigins(single, slices, [service('demo')]), [
      { prefix: '/', name: 'demo', port: 80, weight: 1, readyEndpoints: 1 },
    ]);
  });
});

describe('EdgeSite origins: the Service port, matched to the slices by name', () => {
  const twoPorts = service('demo', [
    { name: 'http', port: 80, targetPort: 8080 },
    { name: 'metrics', port: 9090, targetPort: 'metrics' },
  ]);

  it('finds port 80 under its name http, whose endpoints listen on 8080', () => {
    const slices = [
      slice('demo-http', 'demo', [ready('10.0.0.1'), ready('10.0.0.2')]),
      // A Service port named metrics whose target number happens to be 80: not the site's port.
      slice('demo-metrics', 'demo', [ready('10.0.0.3')], { ports: [{ name: 'metrics', port: 80 }] }),
    ];
    assert.deepEqual(bareOrigins(single, slices, [twoPorts]), [
      { prefix: '/', name: 'demo', port: 80, weight: 1, readyEndpoints: 2 },
    ]);
  });

  it('counts a named target port resolved to other numbers on other Pods (slices split by number)', () => {
    const slices = [
      slice('demo-a', 'demo', [ready('10.0.0.1')], { ports: [{ name: 'http', port: 8080 }] }),
      slice('demo-b', 'demo', [ready('10.0.0.2')], { ports: [{ name: 'http', port: 8081 }] }),
    ];
    assert.deepEqual(bareOrigins(single, slices, [twoPorts]), [
      { prefix: '/', name: 'demo', port: 80, weight: 1, readyEndpoints: 2 },
    ]);
  });

  it('matches the one unnamed port of a Service to the slice port with an empty or absent name', () => {
    const unnamed = service('demo', [{ port: 80, targetPort: 8080 }]);
    const slices = [
      slice('demo-a', 'demo', [ready('10.0.0.1')], { ports: [{ name: '', port: 8080 }] }),
      slice('demo-b', 'demo', [ready('10.0.0.2')], { ports: [{ port: 8080 }] }),
      slice('demo-c', 'demo', [ready('10.0.0.3')], { ports: [{ name: 'http', port: 8080 }] }),
    ];
    assert.deepEqual(bareOrigins(single, slices, [unnamed]), [
      { prefix: '/', name: 'demo', port: 80, weight: 1, readyEndpoints: 2 },
    ]);
  });

  it('reports PortNotFound when the site names the target port instead of the Service port', () => {
    const s = site({ upstream: { name: 'demo', port: 8080 } });
    const slices = [slice('demo-a', 'demo', [ready('10.0.0.1')])];
    const [report] = originReports(s, slices, [twoPorts]);
    assert.deepEqual(bare(report?.status), {
      prefix: '/',
      name: 'demo',
      port: 8080,
      weight: 1,
      readyEndpoints: 0,
      reason: 'PortNotFound',
    });
    assert.equal(
      report?.message,
      'route /, Service demo port 8080: the Service has no TCP port with this number (it has 80/TCP (http), ' +
        '9090/TCP (metrics)): name a port of the Service, not the target port of its Pods',
    );
  });

  it('does not take a UDP port of the same number for the TCP port a route needs', () => {
    const udp = service('demo', [{ name: 'dns', port: 80, protocol: 'UDP' }]);
    const slices = [slice('demo-a', 'demo', [ready('10.0.0.1')], { ports: [{ name: 'dns', port: 53 }] })];
    assert.equal(bareOrigins(single, slices, [udp])[0]?.reason, 'PortNotFound');
  });
});

describe('EdgeSite origins: weights, routes and reasons', () => {
  it("reports the docs' example: weights 300 and 100 on /app, the single upstream on /", () => {
    const s = site({
      upstream: { name: 'docs', port: 80 },
      routes: [
        {
          prefix: '/app',
          upstreams: [
            { name: 'demo', port: 80, weight: 300 },
            { name: 'demo-next', port: 80, weight: 100 },
          ],
        },
        { prefix: '/' },
      ],
    });
    const slices = [
      slice('docs-a', 'docs', [ready('10.0.0.1'), ready('10.0.0.2')]),
      slice('demo-a', 'demo', [ready('10.0.1.1'), ready('10.0.1.2')]),
      slice('demo-b', 'demo', [ready('10.0.1.3')]),
      slice('demo-next-a', 'demo-next', [ready('10.0.2.1')]),
    ];
    const expected: OriginStatus[] = [
      { prefix: '/', name: 'docs', port: 80, weight: 1, readyEndpoints: 2 },
      { prefix: '/app', name: 'demo', port: 80, weight: 300, readyEndpoints: 3 },
      { prefix: '/app', name: 'demo-next', port: 80, weight: 100, readyEndpoints: 1 },
    ];
    const services = [service('docs'), service('demo'), service('demo-next')];
    assert.deepEqual(bareOrigins(s, slices, services), expected);
    // The order is the status list's, whatever the order of the inputs.
    assert.deepEqual(bareOrigins(s, [...slices].reverse(), [...services].reverse()), expected);
  });

  it('reports weight 0 as drained, with its ready endpoints', () => {
    const s = site({
      upstream: { name: 'docs', port: 80 },
      routes: [
        {
          prefix: '/app',
          upstreams: [
            { name: 'demo', port: 80, weight: 0 },
            { name: 'demo-next', port: 80, weight: 100 },
          ],
        },
      ],
    });
    const slices = [
      slice('demo-a', 'demo', [ready('10.0.1.1'), ready('10.0.1.2')]),
      slice('demo-next-a', 'demo-next', [ready('10.0.2.1')]),
    ];
    const reports = originReports(s, slices, [service('demo'), service('demo-next')]);
    assert.deepEqual(
      reports.map((r) => bare(r.status)),
      [
        { prefix: '/app', name: 'demo', port: 80, weight: 0, readyEndpoints: 2, reason: 'Drained' },
        { prefix: '/app', name: 'demo-next', port: 80, weight: 100, readyEndpoints: 1 },
      ],
    );
    assert.equal(
      reports[0]?.message,
      'route /app, Service demo port 80: drained (weight 0), it receives no new requests (2 ready endpoints)',
    );
  });

  it('keeps Drained for a drained origin whose Service is gone, and says so in the message', () => {
    const s = site({
      upstream: { name: 'docs', port: 80 },
      routes: [{ prefix: '/old', upstreams: [{ name: 'gone', port: 80, weight: 0 }] }],
    });
    const [report] = originReports(s, [], []);
    assert.deepEqual(bare(report?.status), {
      prefix: '/old',
      name: 'gone',
      port: 80,
      weight: 0,
      readyEndpoints: 0,
      reason: 'Drained',
    });
    assert.equal(
      report?.message,
      'route /old, Service gone port 80: drained (weight 0), it receives no new requests (0 ready endpoints; ' +
        "besides, no such Service in the site's namespace: create it, or correct the name)",
    );
  });

  it('reports NoEndpointSlices for a Service with no slice (no selector, or ExternalName)', () => {
    const [report] = originReports(
      single,
      [slice('other-a', 'other', [ready('10.0.0.1')])],
      [service('demo')],
    );
    assert.deepEqual(bare(report?.status), {
      prefix: '/',
      name: 'demo',
      port: 80,
      weight: 1,
      readyEndpoints: 0,
      reason: 'NoEndpointSlices',
    });
    assert.equal(
      report?.message,
      'route /, Service demo port 80: the Service has no EndpointSlice: a Service without a selector has ' +
        'none unless they are written for it, and one of type ExternalName has none at all',
    );
  });

  it('reports ServiceNotFound for a Service that does not exist, whatever slices are left', () => {
    const slices = [slice('demo-a', 'demo', [ready('10.0.0.1')])];
    assert.deepEqual(bareOrigins(single, slices, [service('other')]), [
      { prefix: '/', name: 'demo', port: 80, weight: 1, readyEndpoints: 0, reason: 'ServiceNotFound' },
    ]);
  });

  it('routes to spec.upstream with weight 1 without routes, with empty routes, and for a route without upstreams', () => {
    const upstream = { name: 'docs', port: 80 };
    assert.deepEqual(declaredOrigins({ upstream }), [{ prefix: '/', name: 'docs', port: 80, weight: 1 }]);
    assert.deepEqual(declaredOrigins({ upstream, routes: [] }), [
      { prefix: '/', name: 'docs', port: 80, weight: 1 },
    ]);
    assert.deepEqual(
      declaredOrigins({
        upstream,
        routes: [{ prefix: '/blog' }, { prefix: '/app', upstreams: [{ name: 'demo', port: 8080 }] }],
      }),
      [
        { prefix: '/app', name: 'demo', port: 8080, weight: 1 },
        { prefix: '/blog', name: 'docs', port: 80, weight: 1 },
      ],
    );
  });

  it('gives each reason its constant', () => {
    assert.deepEqual(Object.values(OriginReason), [
      'Drained',
      'ServiceNotFound',
      'PortNotFound',
      'NoEndpointSlices',
      'NoReadyEndpoints',
    ]);
  });
});

describe('EdgeSite origins: which sites a change re-reconciles', () => {
  const sites = [
    site({ upstream: { name: 'demo', port: 80 } }, 'a'),
    site(
      {
        upstream: { name: 'docs', port: 80 },
        routes: [{ prefix: '/app', upstreams: [{ name: 'demo', port: 8080, weight: 1 }] }],
      },
      'b',
    ),
    // Names demo only in spec.upstream, which every route overrides: demo is not one of its origins.
    site(
      {
        upstream: { name: 'demo', port: 80 },
        routes: [{ prefix: '/', upstreams: [{ name: 'docs', port: 80, weight: 1 }] }],
      },
      'c',
    ),
    site({ upstream: { name: 'docs', port: 80 } }, 'd'),
    site({ upstream: { name: 'demo', port: 80 } }, 'e', 'elsewhere'),
  ];

  it('maps an EndpointSlice to the sites of its namespace with an origin on its Service', () => {
    assert.deepEqual(endpointSliceSites(slice('demo-a', 'demo', []), sites), ['shop/a', 'shop/b']);
    // b names docs only in spec.upstream, which its one route overrides.
    assert.deepEqual(endpointSliceSites(slice('docs-a', 'docs', []), sites), ['shop/c', 'shop/d']);
  });

  it('maps a slice without the service-name label to no site', () => {
    const unlabelled: EndpointSlice = { metadata: { name: 'x', namespace: NS }, addressType: 'IPv4' };
    assert.deepEqual(endpointSliceSites(unlabelled, sites), []);
  });

  it('maps a Service to the sites with an origin on it', () => {
    assert.deepEqual(serviceSites(service('demo'), sites), ['shop/a', 'shop/b']);
    assert.deepEqual(serviceSites(service('nobody'), sites), []);
  });
});

// ---------------------------------------------------------------------------------------
// The property: the count and the reason against a naive counter.

interface GenEndpoint {
  readonly index: number;
  readonly ready: boolean | undefined;
  readonly terminating: boolean | undefined;
}
interface GenSlice {
  readonly service: string;
  readonly family: 'IPv4' | 'IPv6';
  readonly ports: readonly EndpointSlicePort[];
  readonly endpoints: readonly GenEndpoint[];
}

const PORT_ENTRIES: readonly EndpointSlicePort[] = [
  { name: 'http', port: 8080 },
  { name: 'metrics', port: 9090 },
  { name: '', port: 80 },
  { port: 80 },
  { name: 'other', port: 80 },
];

const genSlice: fc.Arbitrary<GenSlice> = fc.record({
  service: fc.constantFrom('a', 'b', 'c'),
  family: fc.constantFrom('IPv4' as const, 'IPv6' as const),
  ports: fc.subarray([...PORT_ENTRIES]),
  endpoints: fc.array(
    fc.record({
      index: fc.integer({ min: 0, max: 4 }),
      ready: fc.constantFrom(true, false, undefined),
      terminating: fc.constantFrom(true, false, undefined),
    }),
    { maxLength: 6 },
  ),
});

function addressOf(family: string, index: number): string {
  return family === 'IPv4' ? `10.0.0.${index}` : `fd00::${index}`;
}

function toSlice(g: GenSlice, i: number): EndpointSlice {
  const endpoints = g.endpoints.map((e) => {
    const conditions: { ready?: boolean; terminating?: boolean } = {};
    if (e.ready !== undefined) conditions.ready = e.ready;
    if (e.terminating !== undefined) conditions.terminating = e.terminating;
    return { addresses: [addressOf(g.family, e.index)], conditions };
  });
  return slice(`${g.service}-${i}`, g.service, endpoints, { addressType: g.family, ports: g.ports });
}

/** The rule in words, with arrays and loops: no Map, no Set, nothing shared with the code. */
function naiveReady(slices: readonly GenSlice[], service: string, portName: string): number {
  let best = 0;
  for (const family of ['IPv4', 'IPv6']) {
    const addresses: string[] = [];
    const readyAddresses: string[] = [];
    for (const g of slices) {
      if (g.service !== service || g.family !== family) continue;
      if (!g.ports.some((p) => (p.name === undefined ? '' : p.name) === portName)) continue;
      for (const e of g.endpoints) {
        const address = addressOf(family, e.index);
        if (!addresses.includes(address)) addresses.push(address);
        const isReady = e.ready !== false && e.terminating !== true;
        if (isReady && !readyAddresses.includes(address)) readyAddresses.push(address);
      }
    }
    if (readyAddresses.length > best) best = readyAddresses.length;
  }
  return best;
}

describe('EdgeSite origins: property', () => {
  it('counts and explains every origin as the naive counter does, whatever the order of the slices', () => {
    // Service a: port 80 (http) and 9090 (metrics); Service b: one unnamed port 80.
    const serviceA = service('a', [
      { name: 'http', port: 80, targetPort: 8080 },
      { name: 'metrics', port: 9090, targetPort: 9090 },
    ]);
    const serviceB = service('b', [{ port: 80, targetPort: 80 }]);
    // The origins, with the Service port's name each one must be matched by.
    const origins = [
      { prefix: '/', service: 'a', port: 80, portName: 'http' },
      { prefix: '/b', service: 'b', port: 80, portName: '' },
      { prefix: '/m', service: 'a', port: 9090, portName: 'metrics' },
    ];
    fc.assert(
      fc.property(
        fc.array(genSlice, { maxLength: 6 }),
        fc.tuple(fc.nat(3), fc.nat(3), fc.nat(3)),
        fc.boolean(),
        fc.infiniteStream(fc.nat()),
        (gen, weights, withB, noise) => {
          const s = site({
            upstream: { name: 'a', port: 80 },
            routes: origins.map((o, i) => ({
              prefix: o.prefix,
              upstreams: [{ name: o.service, port: o.port, weight: weights[i] ?? 1 }],
            })),
          });
          const slices = gen.map(toSlice);
          const services = withB ? [serviceA, serviceB] : [serviceA];
          const got = bareOrigins(s, slices, services);
          // Any other order of the slices gives the same entries.
          const keyed = slices.map((sl) => ({ sl, k: noise.next().value as number }));
          const shuffled = keyed.sort((x, y) => x.k - y.k).map((x) => x.sl);
          assert.deepEqual(bareOrigins(s, shuffled, services), got);

          assert.equal(got.length, 3);
          origins.forEach((o, i) => {
            const entry = got[i];
            const weight = weights[i] ?? 1;
            const serviceExists = o.service === 'a' || withB;
            const hasSlices = gen.some((g) => g.service === o.service);
            const count = serviceExists && hasSlices ? naiveReady(gen, o.service, o.portName) : 0;
            let reason: string | undefined;
            if (weight === 0) reason = 'Drained';
            else if (!serviceExists) reason = 'ServiceNotFound';
            else if (!hasSlices) reason = 'NoEndpointSlices';
            else if (count === 0) reason = 'NoReadyEndpoints';
            const expected: OriginStatus = {
              prefix: o.prefix,
              name: o.service,
              port: o.port,
              weight,
              readyEndpoints: count,
            };
            assert.deepEqual(entry, reason === undefined ? expected : { ...expected, reason });
          });
        },
      ),
      { numRuns: 500 },
    );
  });
});
