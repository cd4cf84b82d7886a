/**
 * exoledge installed from its chart on the node. Cilium is stood in by its real CRDs
 * (read from Cilium's Go module: the apiserver validates what the operator writes as a
 * cluster with Cilium would), with no Cilium agent or datapath: nothing here drops a
 * packet. The lists are plain text files served over HTTP from the host, on the node's
 * address (the only address pods can reach), by a server that records who asked.
 *
 * Golden path: a Certain, enforced BlocklistSource publishes CiliumCIDRGroup shards and a
 * deny policy; a Presumed one publishes decider ConfigMap shards; deleting them lets the
 * operator's finalizer remove everything they published. The chart has no admission
 * webhook and no conversion webhook (its CRDs have one version each and refuse bad specs
 * with CEL rules), so what the apiserver calls here is the CRD's own validation.
 *
 * Expected values are literals worked out by hand from the served lists, the apiserver's
 * answers and the list server's record; none is computed with the operator's code.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { NODE_ADDRESSES, thirdPartyCrds } from '@operators/controlplane';
import { stringify } from 'yaml';
import { type ChartUnderTest, eventually, podsOf } from './support/chart-checks.ts';
import type { NodeEnv } from './support/node-env.ts';

/**
 * The release namespace, which is also the chart's default decider namespace: the decider
 * shards go there with no value set. (A decider namespace of its own, created by the chart,
 * costs about 6 s more at uninstall on this machine, the namespace controller's time; the
 * chart tests apply that variant on a real apiserver.)
 */
const NAMESPACE = 'exoledge-system';
const SCANNERS = 'e2e-scanners';
const PROXIES = 'e2e-proxies';

/**
 * A scanner list: four lines that merge into 198.18.0.0/22, one line with host bits set,
 * a duplicate, a malformed line and an IPv6 /64. Merged by hand, in address order (IPv4
 * first): 192.0.2.0/24, 198.18.0.0/22, 198.51.100.0/24, 2001:db8:9::/64.
 */
const SCANNERS_LIST = `# e2e scanners
192.0.2.0/24
198.18.0.0/24
198.18.1.0/24
198.18.2.0/23
198.18.2.7/23
198.51.100.0/24
198.51.100.0/24
2001:db8:9::/64
not-an-address
`;

/** A proxy list: two /25 halves of one /24 and a lone IPv6 address. Merged: 203.0.113.0/24, 2001:db8:a::1/128. */
const PROXIES_LIST = '203.0.113.0/25\n203.0.113.128/25\n2001:db8:a::1\n';

/** Who asked for which list: the server's own record. */
interface ListRequest {
  readonly path: string;
  readonly from: string;
}

interface ListHost {
  readonly url: (path: string) => string;
  readonly requests: ListRequest[];
  readonly server: Server;
}

/** Serves the two lists on the node's address, the one pods can reach; records every request. */
async function serveLists(): Promise<ListHost> {
  const lists: Record<string, string> = { '/scanners.txt': SCANNERS_LIST, '/proxies.txt': PROXIES_LIST };
  const requests: ListRequest[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    requests.push({ path, from: req.socket.remoteAddress ?? '' });
    const body = lists[path];
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(body ?? 'not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, NODE_ADDRESSES.ip, resolve);
  });
  // A failed run that never reaches cleanUp must not keep the test process alive.
  server.unref();
  const { port } = server.address() as AddressInfo;
  return { url: (path) => `http://${NODE_ADDRESSES.ip}:${port}${path}`, requests, server };
}

let lists: ListHost | undefined;
let deciderImage = '';

const listHost = (): ListHost => {
  if (!lists) throw new Error('the list server did not start (prepare failed)');
  return lists;
};

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number;
}

interface Source {
  readonly metadata: { readonly generation: number };
  readonly status?: {
    readonly observedGeneration?: number;
    readonly channel?: string;
    readonly shards?: number;
    readonly fingerprint?: string;
    readonly entries?: Record<string, number>;
    readonly conditions?: readonly Condition[];
  };
}

async function getJson<T>(env: NodeEnv, args: readonly string[]): Promise<T> {
  return JSON.parse(await env.kubectl(['get', ...args, '-o', 'json'])) as T;
}

/** The source once Ready is True for its current generation (as the apiserver stores it). */
async function published(env: NodeEnv, name: string): Promise<Source> {
  return eventually(`BlocklistSource ${name} Published`, 30_000, async () => {
    const s = await getJson<Source>(env, ['blocklistsource', name]);
    const ready = s.status?.conditions?.find((c) => c.type === 'Ready');
    return ready?.status === 'True' &&
      ready.reason === 'Published' &&
      s.status?.observedGeneration === s.metadata.generation
      ? s
      : undefined;
  });
}

async function applySource(env: NodeEnv, name: string, spec: Record<string, unknown>): Promise<void> {
  await env.kubectl(
    ['apply', '-f', '-'],
    stringify({ apiVersion: 'edge.exoledge.io/v1alpha1', kind: 'BlocklistSource', metadata: { name }, spec }),
  );
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Seconds from each pod's start to its Ready condition, from the kubelet's status. */
async function startToReady(env: NodeEnv): Promise<string> {
  const pods = await getJson<{
    items: {
      metadata: { name: string };
      status: { startTime?: string; conditions?: { type: string; lastTransitionTime?: string }[] };
    }[];
  }>(env, ['pods', '-n', NAMESPACE, '-l', 'app.kubernetes.io/instance=exoledge']);
  return pods.items
    .map((p) => {
      const ready = p.status.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime;
      const s =
        ready && p.status.startTime ? (Date.parse(ready) - Date.parse(p.status.startTime)) / 1000 : NaN;
      return `${p.metadata.name} ${s} s`;
    })
    .join(', ');
}

export const exoledgeOnNode: ChartUnderTest = {
  operator: 'exoledge',
  release: 'exoledge',
  namespace: NAMESPACE,
  // Our image for each of exoledge's own: the operator, and the console bridge (off by
  // default; set so that turning it on runs ours, not a pull from ghcr.io).
  imageValues: { image: 'exoledge-operator', 'bridge.image': 'exoledge-bridge' },
  get values(): readonly string[] {
    return [
      // The chart's Valkey is docker.io/valkey/valkey, which this node cannot pull (no
      // registry, nothing leaves the machine) and the project does not build: a user here
      // imports it into containerd first, or points valkey.url at their own. Valkey serves
      // only EdgeSite deciders, which this golden path does not run; without it deciders
      // run without state (docs/exoledge.md, "Without Valkey: fail open").
      'valkey.deploy=false',
      // The decider each EdgeSite runs: ours, as the node imported it (a plain string
      // value, not repository/tag, so it is set here once prepare has the reference).
      ...(deciderImage ? [`edgeSites.deciderImage=${deciderImage}`] : []),
    ];
  },
  deployment: 'exoledge',
  lease: 'exoledge-operator.edge.exoledge.io',
  metrics: { port: 8443, readerClusterRole: `${NAMESPACE}-exoledge-metrics-reader` },
  // The operator exits at start if Cilium's kinds are not served: Cilium installs its CRDs
  // before anything else in a real cluster, so they are here before the install.
  prepare: async (env: NodeEnv) => {
    const crds = await thirdPartyCrds('cilium');
    await env.kubectl(
      ['apply', '--server-side', '--force-conflicts', '--field-manager=e2e-cilium', '-f', '-'],
      crds.map((c) => `---\n${stringify(c)}`).join('\n'),
    );
    // kubectl wait fails at once on a CRD whose status has no conditions yet (just
    // created: "<nil> is of the type <nil>"), so it is asked again until it can wait.
    await eventually('the Cilium CRDs Established', 30_000, async () => {
      await env.kubectl([
        'wait',
        '--for=condition=Established',
        ...crds.map((c) => `crd/${c.metadata.name}`),
        '--timeout=30s',
      ]);
      return true;
    });
    const ref = env.images['exoledge-decider'];
    if (!ref) throw new Error('no image exoledge-decider was built');
    deciderImage = ref;
    lists = await serveLists();
  },
  golden: (env) => {
    it("a Certain enforced BlocklistSource publishes CiliumCIDRGroup shards and a deny policy, read by the leader pod from a list served over HTTP on the host's 10.244.0.1 (Cilium's real CRDs, no Cilium datapath)", async (t) => {
      const e = env();
      t.diagnostic(`pod start → Ready: ${await startToReady(e)}`);
      await applySource(e, SCANNERS, {
        url: listHost().url('/scanners.txt'),
        kind: 'Certain',
        enforce: true,
        shardSize: 2,
        refreshInterval: '1h',
        podSelector: { matchLabels: { istio: 'ingressgateway' } },
      });
      const source = await published(e, SCANNERS);
      assert.equal(source.status?.channel, 'CiliumPolicy');
      assert.deepEqual(source.status?.entries, {
        read: 8,
        malformed: 1,
        normalised: 1,
        refused: 0,
        merged: 4,
        published: 4,
        dropped: 0,
      });
      assert.equal(source.status?.shards, 2);
      assert.equal(
        source.status?.fingerprint,
        sha256('192.0.2.0/24\n198.18.0.0/22\n198.51.100.0/24\n2001:db8:9::/64\n'),
      );

      const groups = await getJson<{
        items: { metadata: { name: string }; spec: { externalCIDRs: string[] } }[];
      }>(e, ['ciliumcidrgroups', '-l', `edge.exoledge.io/source=${SCANNERS}`]);
      assert.deepEqual(groups.items.map((g) => [g.metadata.name, g.spec.externalCIDRs]).sort(), [
        [`${SCANNERS}-0`, ['192.0.2.0/24', '198.18.0.0/22']],
        [`${SCANNERS}-1`, ['198.51.100.0/24', '2001:db8:9::/64']],
      ]);
      const policy = await getJson<{ spec: unknown }>(e, [
        'ciliumclusterwidenetworkpolicy',
        `deny-${SCANNERS}`,
      ]);
      assert.deepEqual(policy.spec, {
        description: `exoledge: ingress denied from the addresses of BlocklistSource ${SCANNERS}`,
        endpointSelector: { matchLabels: { istio: 'ingressgateway' } },
        enableDefaultDeny: { ingress: false, egress: false },
        ingressDeny: [
          { fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { 'edge.exoledge.io/source': SCANNERS } } }] },
        ],
      });

      // The server's record: the list was fetched from a pod of the release, over the
      // pod network (the host's own requests would come from 10.244.0.1).
      const podIps = (await podsOf(e, exoledgeOnNode)).map((p) => p.status.podIP);
      const asked = listHost().requests.filter((r) => r.path === '/scanners.txt');
      assert.ok(asked.length >= 1, 'the list server was asked for the list');
      for (const r of asked) {
        assert.ok(podIps.includes(r.from), `${r.from} is one of the release's pods (${podIps.join(', ')})`);
      }
    });

    it("a Presumed BlocklistSource publishes its prefixes as decider ConfigMap shards in the decider namespace (the release's, by default)", async () => {
      const e = env();
      await applySource(e, PROXIES, {
        url: listHost().url('/proxies.txt'),
        kind: 'Presumed',
        refreshInterval: '1h',
      });
      const source = await published(e, PROXIES);
      assert.equal(source.status?.channel, 'Decider');
      assert.equal(source.status?.shards, 1);
      const shards = await getJson<{
        items: { metadata: { name: string; labels: Record<string, string> }; data: Record<string, string> }[];
      }>(e, ['configmaps', '-n', NAMESPACE, '-l', `edge.exoledge.io/source=${PROXIES}`]);
      const text = '203.0.113.0/24\n2001:db8:a::1/128\n';
      assert.deepEqual(
        shards.items.map((c) => ({
          name: c.metadata.name,
          kind: c.metadata.labels['edge.exoledge.io/kind'],
          data: c.data,
        })),
        [
          {
            name: `blocklist-${PROXIES}-0`,
            kind: 'Presumed',
            data: { 'prefixes.txt': text, fingerprint: sha256(text), total: '1' },
          },
        ],
      );
    });

    it("the apiserver refuses a bad BlocklistSource with the chart's CRD rules: enforce on a Presumed list", async () => {
      await assert.rejects(
        applySource(env(), 'e2e-refused', {
          url: listHost().url('/proxies.txt'),
          kind: 'Presumed',
          enforce: true,
        }),
        /spec\.enforce: Forbidden: enforce applies to Certain lists only/,
      );
    });

    it("deleting the sources: the operator's finalizer removes every shard and the policy, then lets them go", async () => {
      const e = env();
      await e.kubectl(['delete', 'blocklistsource', SCANNERS, PROXIES, '--wait=true', '--timeout=30s']);
      const left = await e.kubectl([
        'get',
        'ciliumcidrgroups,ciliumclusterwidenetworkpolicies',
        '-l',
        `edge.exoledge.io/source in (${SCANNERS},${PROXIES})`,
        '-o',
        'name',
      ]);
      const cms = await e.kubectl([
        'get',
        'configmaps',
        '-n',
        NAMESPACE,
        '-l',
        'edge.exoledge.io/source',
        '-o',
        'name',
      ]);
      assert.deepEqual([left.trim(), cms.trim()], ['', '']);
    });
  },
  // Sources first, while the operator runs: its finalizer is what lets them go. Cilium's
  // CRDs stay, as Cilium's would; the chart's own CRDs stay too (helm never deletes them).
  cleanUp: async (env: NodeEnv) => {
    await env.kubectl([
      'delete',
      'blocklistsource',
      SCANNERS,
      PROXIES,
      '--ignore-not-found',
      '--wait=true',
      '--timeout=30s',
    ]);
    await new Promise<void>((resolve) => (lists ? lists.server.close(() => resolve()) : resolve()));
    lists = undefined;
  },
};
