/**
 * gitops-reverser installed from its chart on the node. Golden path: a ConfigMap of a
 * namespace the ClusterProvider `default` admits is pushed by the operator's pod, over
 * smart HTTP, to a git remote on the host (git's own `git-http-backend`, the server git
 * hosting runs behind Apache or nginx, reached from the pod on the node's address); a
 * GitTarget of a namespace the provider does not admit is refused with the gate's reason
 * and message, and nothing of it reaches the remote.
 *
 * The gate is not a webhook (docs/gitops-reverser.md, "Why a reconciler check"): the
 * decision crosses objects (GitTarget → ClusterProvider → the Namespace's labels), so the
 * operator checks it at every reconcile and the chart has no webhook or Service for the
 * apiserver to call. What is checked here is the gate as the installed chart runs it.
 *
 * Expected values are fixed (paths, the ConfigMap's data, the committer the docs give, the
 * gate's message as upstream words it) or read from the remote with the host's git.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import {
  type GitHttpServer,
  startGitHttpServer,
} from '../operators/gitops-reverser/test/support/git-http-server.ts';
import { type ChartUnderTest, eventually } from './support/chart-checks.ts';
import type { NodeEnv } from './support/node-env.ts';

const exec = promisify(execFile);

/** The node's address: the only one of the host a pod can reach. */
const HOST_ADDRESS = '10.244.0.1';
/** The namespace the ClusterProvider admits (values: clusterProvider.accessFrom.names). */
const ADMITTED = 'gr-team-a';
/** A namespace it does not admit. */
const REFUSED = 'gr-team-b';
const USER = 'mirror';
const TOKEN = 'e2e-t0ken-on-the-node';

interface Remote {
  readonly root: string;
  readonly bare: string;
  readonly server: GitHttpServer;
  readonly proxy: Server;
  readonly sockets: Set<Socket>;
  /** The URL a pod pushes to. */
  readonly url: string;
}

let remote: Remote | undefined;

/** Runs the host's git on the bare repository. */
async function git(bare: string, ...args: string[]): Promise<string> {
  const { stdout } = await exec('git', ['--git-dir', bare, ...args], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
    },
  });
  return stdout;
}

/**
 * The test support's git server listens on loopback; pods reach the host only on the
 * node's address, so a plain TCP forward on that address stands in front of it.
 */
async function startRemote(): Promise<Remote> {
  const root = await mkdtemp(join(tmpdir(), 'kot-e2e-gitops-reverser-'));
  const bare = join(root, 'fleet.git');
  await exec('git', ['init', '--quiet', '--bare', '--initial-branch=main', bare]);
  const server = await startGitHttpServer({ projectRoot: root, username: USER, token: TOKEN });
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const upstream = connect(server.port, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = (): void => {
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(0, HOST_ADDRESS, resolve);
  });
  const { port } = proxy.address() as { port: number };
  return { root, bare, server, proxy, sockets, url: `http://${HOST_ADDRESS}:${port}/fleet.git` };
}

async function stopRemote(): Promise<void> {
  const r = remote;
  remote = undefined;
  if (!r) return;
  for (const s of r.sockets) s.destroy();
  await new Promise<void>((resolve) => r.proxy.close(() => resolve()));
  await r.server.stop();
  await rm(r.root, { recursive: true, force: true });
}

/** What a team writes to mirror its ConfigMaps into `live/` of the remote's main. */
function teamObjects(ns: string, url: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'fleet-token', namespace: ns },
        stringData: { username: USER, token: TOKEN },
      },
      {
        apiVersion: 'configbutler.ai/v1alpha3',
        kind: 'GitProvider',
        metadata: { name: 'fleet', namespace: ns },
        spec: { url, secretRef: { name: 'fleet-token' }, allowedBranches: ['main'] },
      },
      {
        apiVersion: 'configbutler.ai/v1alpha3',
        kind: 'GitTarget',
        // clusterProviderRef omitted: the chart's ClusterProvider `default`.
        metadata: { name: 'live', namespace: ns },
        spec: { providerRef: { name: 'fleet' }, branch: 'main', path: 'live', commit: { window: '0s' } },
      },
      {
        apiVersion: 'configbutler.ai/v1alpha3',
        kind: 'WatchRule',
        metadata: { name: 'configmaps', namespace: ns },
        spec: { targetRef: { name: 'live' }, rules: [{ apiGroups: [''], resources: ['configmaps'] }] },
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'greeting', namespace: ns },
        data: { hello: 'world' },
      },
    ],
  });
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

async function readyOf(env: NodeEnv, ns: string): Promise<Condition | undefined> {
  const out = await env.kubectl(['get', 'gittarget', 'live', '-n', ns, '-o', 'json']);
  const t = JSON.parse(out) as { status?: { conditions?: Condition[] } };
  return t.status?.conditions?.find((c) => c.type === 'Ready');
}

export const gitopsReverserOnNode: ChartUnderTest = {
  operator: 'gitops-reverser',
  release: 'gitops-reverser',
  namespace: 'gitops-reverser',
  imageValues: { image: 'gitops-reverser' },
  values: [
    // Two replicas: one leads and writes to Git, the other waits (the chart's default is one;
    // a user who wants fail-over sets two, and the leader fail-over check needs them).
    'replicas=2',
    // A provider owner admits teams by name (the default admits every namespace): the gate's
    // refusal is then observable for any other namespace.
    `clusterProvider.accessFrom.names={${ADMITTED}}`,
  ],
  deployment: 'gitops-reverser',
  lease: 'gitops-reverser.configbutler.ai',
  metrics: { port: 8443, readerClusterRole: 'gitops-reverser-gitops-reverser-metrics-reader' },
  golden: (env) => {
    after(stopRemote);

    it('pushes a ConfigMap of an admitted namespace over HTTP to a git remote on the host (real git-http-backend), and the commit is in the remote', async () => {
      const e = env();
      remote = await startRemote();
      const { bare, url } = remote;
      for (const ns of [ADMITTED, REFUSED]) {
        await e.kubectl(['create', 'namespace', ns]);
        await e.kubectl(['apply', '-f', '-'], teamObjects(ns, url));
      }
      const file = `live/${ADMITTED}/configmaps/greeting.yaml`;
      const text = await eventually(`${file} on the remote's main`, 45_000, async () => {
        try {
          return await git(bare, 'show', `main:${file}`);
        } catch {
          // What the operator says, for the failure message.
          const c = await readyOf(e, ADMITTED);
          throw new Error(
            `not in the remote; the GitTarget says Ready=${c?.status} ${c?.reason}: ${c?.message}`,
          );
        }
      });
      const doc = parse(text) as { kind: string; metadata: Record<string, unknown>; data: unknown };
      assert.equal(doc.kind, 'ConfigMap');
      assert.equal(doc.metadata.name, 'greeting');
      assert.equal(doc.metadata.namespace, ADMITTED);
      assert.deepEqual(doc.data, { hello: 'world' });
      const committer = (await git(bare, 'log', '-1', '--format=%cn <%ce>', 'main', '--', file)).trim();
      assert.equal(committer, 'gitops-reverser <noreply@gitops-reverser.invalid>');
      // The push went through the server, with the GitProvider Secret's credentials.
      const pushes = remote.server.requests.filter((r) => r.path === '/fleet.git/git-receive-pack');
      assert.ok(
        pushes.some((r) => r.method === 'POST' && r.status === 200),
        `a receive-pack answered 200: ${JSON.stringify(remote.server.requests)}`,
      );
      await eventually('the admitted GitTarget Ready', 20_000, async () =>
        (await readyOf(e, ADMITTED))?.status === 'True' ? true : undefined,
      );
    });

    it("the ClusterProvider's gate (a reconciler check: the chart has no webhook) refuses a namespace its accessFrom does not name, with the gate's message, and nothing of it is pushed", async () => {
      const e = env();
      const ready = await eventually('the refused GitTarget', 20_000, async () => {
        const c = await readyOf(e, REFUSED);
        return c?.status === 'False' && c.reason === 'NamespaceNotAuthorized' ? c : undefined;
      });
      assert.equal(
        ready.message,
        `namespace "${REFUSED}" is not permitted to reference ClusterProvider "default" (spec.accessFrom)`,
      );
      assert.ok(remote);
      // Every path on every branch of the remote (none if nothing was ever pushed).
      const paths = (await git(remote.bare, 'log', '--all', '--format=', '--name-only')).split('\n');
      assert.deepEqual(
        paths.filter((p) => p.startsWith(`live/${REFUSED}/`)),
        [],
        'nothing of the refused namespace is in the remote',
      );
    });
  },
  cleanUp: async (env: NodeEnv) => {
    // No finalizer on gitops-reverser's kinds (a deleted GitTarget leaves its files): the
    // namespaces go with their objects; the ClusterProvider `default` is the release's.
    await env.kubectl(['delete', 'namespace', ADMITTED, REFUSED, '--ignore-not-found', '--wait=false']);
    await stopRemote();
  },
};
