/**
 * weebo-link installed from its chart on the node. The linked kinds are the test CRDs
 * that stand in for Authentik's and Stalwart's (contract-faithful schemas, no operator
 * behind StalwartAccount). Golden path: a user gets its account, linked, with the mapped
 * spec; the chart's ValidatingAdmissionPolicy refuses a person's edit of a linked field.
 * Faults, on this release: replicas OOM-killed by the kernel during a rollout, and the
 * node's agents restarted under it.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { stringify } from 'yaml';
import { EXAMPLE_RULES_YAML } from '../operators/weebo-link/src/example-rules.ts';
import { authentikUser, TEST_CRDS } from '../operators/weebo-link/src/testkit/crds.ts';
import { type ChartUnderTest, eventually, podsOf } from './support/chart-checks.ts';
import { chartOf, type NodeEnv } from './support/node-env.ts';

interface ContainerStatus {
  name: string;
  containerID?: string;
  restartCount: number;
  lastState?: { terminated?: { reason?: string } };
}

/** The release's running containers, by pod: what a restart of the node must not replace. */
async function containerIds(e: NodeEnv): Promise<Record<string, string>> {
  // The Deployment's current replicas: not the pods a rollback is still removing.
  const pods = await podsOf(e, weeboLinkOnNode);
  return Object.fromEntries(
    pods.map((p) => [
      p.metadata.name,
      (p.status.containerStatuses ?? []).map((c) => c.containerID).join(','),
    ]),
  );
}

export const weeboLinkOnNode: ChartUnderTest = {
  operator: 'weebo-link',
  release: 'weebo-link',
  namespace: 'weebo-link',
  imageValues: { image: 'weebo-link' },
  // The example rule of RFC 0002 (auth → mail), as a user puts it in values.
  valuesYaml: EXAMPLE_RULES_YAML,
  values: [],
  deployment: 'weebo-link',
  lease: 'weebo-link',
  metrics: { port: 8443, readerClusterRole: 'weebo-link-weebo-link-metrics-reader' },
  // The chart renders a Role in each namespace a rule names: they exist before the install.
  prepare: async (env: NodeEnv) => {
    await env.kubectl(['apply', '-f', '-'], TEST_CRDS.map((c) => `---\n${stringify(c)}`).join('\n'));
    await env.kubectl(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=30s']);
    for (const ns of ['auth', 'mail']) await env.kubectl(['create', 'namespace', ns]);
  },
  golden: (env) => {
    it('a new AuthentikUser gets its StalwartAccount in mail, labelled with the rule, with the mapped spec', async () => {
      const e = env();
      await e.kubectl(
        ['apply', '-f', '-'],
        stringify(authentikUser('alice', 'auth', { username: 'alice.w' })),
      );
      const account = await eventually('the StalwartAccount', 30_000, async () => {
        const out = await e.kubectl(['get', 'stalwartaccount', 'alice', '-n', 'mail', '-o', 'json']);
        return JSON.parse(out) as {
          metadata: { labels?: Record<string, string> };
          spec: Record<string, unknown>;
        };
      });
      assert.equal(account.metadata.labels?.['link.weebo.io/link'], 'authentik-user-stalwart-account');
      assert.deepEqual(account.spec, {
        domainRef: { name: 'weebo.poc' },
        name: 'alice.w',
        state: 'Active',
        deletionPolicy: 'Orphan',
      });
    });

    it("the chart's admission policy refuses a person's edit of a linked account's spec", async () => {
      await assert.rejects(
        env().kubectl([
          'patch',
          'stalwartaccount',
          'alice',
          '-n',
          'mail',
          '--type=merge',
          '-p',
          '{"spec":{"state":"Locked"}}',
        ]),
        /denied|ValidatingAdmissionPolicy/,
      );
    });

    it('a replica OOM-killed for exceeding its memory limit is restarted by the kubelet, and the running release loses nothing', async () => {
      const e = env();
      const alice = await e.kubectl([
        'get',
        'stalwartaccount',
        'alice',
        '-n',
        'mail',
        '-o',
        'jsonpath={.metadata.uid}',
      ]);
      // A limit below what node needs to start: the new replicas' first process is killed by the kernel.
      await e.helm([
        'upgrade',
        'weebo-link',
        chartOf('weebo-link'),
        '-n',
        'weebo-link',
        '--reuse-values',
        '--set',
        'resources.limits.memory=32Mi',
        '--set',
        'resources.requests.memory=32Mi',
      ]);
      try {
        const killed = await eventually('a replica OOMKilled and restarted', 60_000, async () => {
          const pods = JSON.parse(
            await e.kubectl([
              'get',
              'pods',
              '-n',
              'weebo-link',
              '-l',
              'app.kubernetes.io/instance=weebo-link',
              '-o',
              'json',
            ]),
          ) as { items: { status: { containerStatuses?: ContainerStatus[] } }[] };
          return pods.items
            .flatMap((p) => p.status.containerStatuses ?? [])
            .find((c) => c.restartCount >= 1 && c.lastState?.terminated?.reason === 'OOMKilled');
        });
        assert.ok(killed);
        // The old replicas, under the old limit, still lead and link: nothing stopped, nothing lost.
        await e.kubectl(['apply', '-f', '-'], stringify(authentikUser('bob', 'auth')));
        await linked(e, 'bob', 'during the failed rollout');
        assert.equal(
          await e.kubectl([
            'get',
            'stalwartaccount',
            'alice',
            '-n',
            'mail',
            '-o',
            'jsonpath={.metadata.uid}',
          ]),
          alice,
        );
      } finally {
        await e.helm(['rollback', 'weebo-link', '1', '-n', 'weebo-link', '--wait', '--timeout', '90s']);
      }
    });

    it('the node restarted under the running operator (kubelet and containerd): the same containers run on, and it still links', async () => {
      const e = env();
      const before = await containerIds(e);
      await e.restartNode();
      await e.kubectl(['wait', '--for=condition=Ready', 'node', '--all', '--timeout=60s']);
      await eventually('both replicas Ready again', 60_000, async () => {
        const ready = (await podsOf(e, weeboLinkOnNode)).filter((p) =>
          p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        return ready.length === 2 ? true : undefined;
      });
      assert.deepEqual(await containerIds(e), before);
      await e.kubectl(['apply', '-f', '-'], stringify(authentikUser('carol', 'auth')));
      await linked(e, 'carol', 'after the restart');
    });
  },
  cleanUp: async (env: NodeEnv) => {
    await env.kubectl(['delete', 'namespace', 'auth', 'mail', '--wait=false']);
    await env.kubectl(['delete', '-f', '-'], TEST_CRDS.map((c) => `---\n${stringify(c)}`).join('\n'));
  },
};

/** Waits for the user's linked StalwartAccount: the operator linked it. */
async function linked(e: NodeEnv, user: string, when: string): Promise<void> {
  await eventually(
    `${user} linked ${when}`,
    30_000,
    async () =>
      (await e.kubectl(['get', 'stalwartaccount', user, '-n', 'mail', '-o', 'name']).catch(() => '')) ||
      undefined,
  );
}
