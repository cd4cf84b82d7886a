/**
 * A remote ClusterProvider: the source is a SECOND real kube-apiserver (its own etcd),
 * reached through a kubeconfig Secret in the operator's namespace. Namespace labels for
 * the gate are read in the control cluster, never the source. A partition long enough
 * for the source's etcd to be compacted makes the watch's resume a 410: the stream
 * relists, replays and sweeps.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import { Harness, KINDS, naiveSanitize, repoDocs, until } from './support/harness.ts';
import { type HoldableProxy, holdableProxy } from './support/tcp-proxy.ts';

const h = Harness.forFile();
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
let remote: TestEnv & { plane: { stop(): Promise<void> } };
let proxy: HoldableProxy;

before(async () => {
  // No watch cache: a resumed watch is answered by etcd itself, so compaction means 410.
  remote = await privateTestEnv({ apiserverFlags: ['--watch-cache=false'] });
  proxy = await holdableProxy(new URL(remote.admin.transport.server));
});
after(async () => {
  await proxy?.close();
  await remote?.close();
  await remote?.plane.stop();
});

/** The remote plane's ConfigMaps of `ns` as the mirror should hold them under `live/`. */
async function remoteDocs(ns: string): Promise<Map<string, unknown>> {
  const list = await remote.admin.list<KubeObject>(CM, { namespace: ns });
  return new Map(
    list.items.map((o) => [`live/${ns}/configmaps/${o.metadata.name}.yaml`, naiveSanitize({ ...CM, ...o })]),
  );
}

async function mirrorsRemote(bare: string, ns: string): Promise<void> {
  let last = '';
  try {
    await until(
      `the repository equals the remote cluster's ConfigMaps of ${ns}`,
      async () => {
        const [want, got] = await Promise.all([remoteDocs(ns), repoDocs(bare, `live/${ns}/`)]);
        try {
          assert.deepEqual(got, want);
          return true;
        } catch (err) {
          last = (err as Error).message.slice(0, 1500);
          return undefined;
        }
      },
      60_000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${last}`);
  }
}

describe('a remote ClusterProvider (a second real kube-apiserver)', () => {
  it("mirrors the source cluster, admits by the CONTROL cluster's Namespace labels, and after a 410 replays and sweeps", async (t) => {
    const label = `gr-remote-${Date.now()}`;
    const ns = await h.namespace(t, 'gr-remote', { [label]: 'yes' });
    // The same namespace on the source, WITHOUT the label: the gate must not look there.
    await remote.admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    for (const name of ['a', 'b', 'gone-later']) {
      await remote.admin.create({ ...CM, metadata: { name, namespace: ns }, data: { from: 'remote' } });
    }
    const server = new URL(remote.admin.transport.server);
    const kubeconfig = readFileSync(remote.kubeconfigPath, 'utf8').replace(
      server.origin,
      `https://127.0.0.1:${proxy.port}`,
    );
    const secretName = `remote-${ns}`;
    // `value.yaml`, the second key tried after `value`.
    await h.admin.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secretName, namespace: h.operatorNamespace },
      stringData: { 'value.yaml': kubeconfig },
    });
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, {
      kubeConfig: { secretRef: { name: secretName } },
      accessFrom: { selector: { matchLabels: { [label]: 'yes' } } },
    });
    await h.waitCondition(KINDS.clusterProvider, undefined, cp, 'Ready', 'True');
    const repo = await h.bareRepo('remote');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url, prune: 'Always' });
    await mirrorsRemote(repo.path, ns);
    assert.equal((await repoDocs(repo.path, `live/${ns}/configmaps/`)).size, 3);

    // A partition: the stream's watch is cut and cannot reconnect; meanwhile the source
    // changes and its etcd is compacted past the watch's resourceVersion.
    proxy.hold();
    await remote.admin.delete(CM, 'gone-later', ns);
    await remote.admin.create({ ...CM, metadata: { name: 'made-meanwhile', namespace: ns } });
    await remote.admin.patch(CM, 'a', ns, { type: 'merge', body: { data: { from: 'remote, updated' } } });
    const compacted = await remote.compactEtcd();
    assert.ok(compacted > 0);
    proxy.release();
    await mirrorsRemote(repo.path, ns);
    assert.ok(
      h.logs.some((l) => /410|[Gg]one|too old|expired/.test(l)),
      'the watch was resumed into a 410 and relisted (see the reflector log)',
    );
  });
});
