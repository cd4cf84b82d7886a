/**
 * What every chart must do on a real node, whatever the operator: the checks of issue 39
 * that do not depend on the operator's domain. Each operator's e2e module calls
 * {@link describeChartOnNode} with its release and adds its golden path between the
 * install and the uninstall.
 *
 * The expectations come from outside the operator: the pod status the kubelet reports, a
 * process's own view of the container from inside it (`/proc/self/status`, a write to
 * `/`), the Lease the apiserver stores, the HTTP status our metrics endpoint gives three
 * tokens the apiserver minted, helm's own verdicts, and the apiserver's listing after
 * the uninstall.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { chartOf, KUBECTL_IMAGE, type NodeEnv } from './node-env.ts';

/** How a chart is installed: what `npm run up -- --node` and the suite both do. */
export interface InstallSpec {
  /** The folder under operators/. */
  readonly operator: string;
  readonly release: string;
  readonly namespace: string;
  /** `--set` pairs beyond the image references (what a user would set). */
  readonly values: readonly string[];
  /** A values file's text, for what `--set` cannot say (lists of rules). */
  readonly valuesYaml?: string;
  /** Run before the install: what a user makes first (namespaces a chart's Roles name, CRDs of neighbours). */
  readonly prepare?: (env: NodeEnv) => Promise<void>;
  /** The catalog images and the values that name them: `{ 'image': 'weebo-link' }`. */
  readonly imageValues: Readonly<Record<string, string>>;
}

/** An installed chart and what the suite checks of it. */
export interface ChartUnderTest extends InstallSpec {
  /** The Lease the replicas elect a leader with, in the release namespace. */
  readonly lease: string;
  /** The Deployment whose replicas elect. */
  readonly deployment: string;
  /** The HTTPS metrics port of the operator's container, and the ClusterRole that allows scraping. */
  readonly metrics: { readonly port: number; readonly readerClusterRole: string };
  /** Called after the install checks: the operator's golden path and its webhooks. */
  readonly golden: (env: () => NodeEnv) => void;
  /** Run before the uninstall: delete what the golden path made (finalizers are the operator's to lift). */
  readonly cleanUp?: (env: NodeEnv) => Promise<void>;
}

interface Pod {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: {
    containers: { name: string; livenessProbe?: unknown; readinessProbe?: unknown }[];
  };
  status: {
    podIP?: string;
    startTime?: string;
    conditions?: { type: string; status: string; lastTransitionTime?: string }[];
    containerStatuses?: {
      name: string;
      ready: boolean;
      restartCount: number;
      containerID?: string;
      state?: { running?: { startedAt?: string } };
    }[];
  };
}

/** The release's pods of its Deployment. */
export async function podsOf(env: NodeEnv, c: ChartUnderTest): Promise<Pod[]> {
  const out = await env.kubectl([
    'get',
    'pods',
    '-n',
    c.namespace,
    '-l',
    `app.kubernetes.io/instance=${c.release}`,
    '-o',
    'json',
  ]);
  // The Deployment's own pods (`<deployment>-<template hash>-<suffix>`), not another
  // workload of the release whose name starts the same (exoledge-bridge beside exoledge).
  return (JSON.parse(out) as { items: Pod[] }).items.filter(
    (p) =>
      p.metadata.name.startsWith(`${c.deployment}-${p.metadata.labels?.['pod-template-hash']}-`) &&
      !p.metadata.deletionTimestamp,
  );
}

function ready(p: Pod): boolean {
  return p.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') ?? false;
}

/** Polls `check` every 200 ms until it returns a value, or fails after `ms` with the last error. */
export async function eventually<T>(
  what: string,
  ms: number,
  check: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${what}: not within ${ms / 1000} s${last ? ` (last: ${(last as Error).message})` : ''}`,
      );
    }
    await sleep(200);
  }
}

async function leaseHolder(env: NodeEnv, c: ChartUnderTest): Promise<string> {
  return (
    await env.kubectl(['get', 'lease', c.lease, '-n', c.namespace, '-o', 'jsonpath={.spec.holderIdentity}'])
  ).trim();
}

/** GET /metrics on a pod's address with an optional bearer token; the status code. */
async function scrape(ip: string, port: number, token: string | undefined): Promise<number> {
  return (await scrapeBody(ip, port, token)).status;
}

/** GET /metrics on a pod's address; the status and the exposition text. */
function scrapeBody(
  ip: string,
  port: number,
  token: string | undefined,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: ip,
        port,
        path: '/metrics',
        // The operator serves a self-signed certificate; what is checked here is who may
        // read, not the server's identity.
        rejectUnauthorized: false,
        headers: token ? { authorization: `Bearer ${token}` } : {},
        timeout: 5_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/**
 * Runs inside the container (every image of ours has node): what the runtime enforces,
 * from the process's own view.
 */
const INSIDE = `
const fs = require('fs');
let write = 'allowed';
try { fs.writeFileSync('/e2e-probe', 'x'); } catch (e) { write = e.code; }
const status = fs.readFileSync('/proc/self/status', 'utf8');
const field = (k) => status.match(new RegExp('^' + k + ':\\\\s*(\\\\S+)', 'm'))[1];
console.log(JSON.stringify({ write, uid: process.getuid(), capEff: field('CapEff'), noNewPrivs: field('NoNewPrivs') }));
`;

/**
 * What a user does to install the chart: the spec's preparations, then `helm install`
 * with the project's images and the spec's values; returns once every pod is Ready
 * (`--wait`). Shared with `npm run up -- --node`.
 */
export async function installChart(e: NodeEnv, c: InstallSpec): Promise<void> {
  await c.prepare?.(e);
  const valuesFile = join(mkdtempSync(join(tmpdir(), 'kot-e2e-values-')), 'values.yaml');
  writeFileSync(valuesFile, c.valuesYaml ?? '');
  const sets = [
    '--values',
    valuesFile,
    ...Object.entries(c.imageValues).flatMap(([key, image]) => {
      const ref = e.images[image];
      if (!ref) throw new Error(`no image ${image} was built`);
      const at = ref.lastIndexOf(':');
      return ['--set', `${key}.repository=${ref.slice(0, at)}`, '--set', `${key}.tag=${ref.slice(at + 1)}`];
    }),
    '--set',
    `helmTest.image=${KUBECTL_IMAGE}`,
    ...c.values.flatMap((v) => ['--set', v]),
  ];
  await e.helm([
    'install',
    c.release,
    chartOf(c.operator),
    '--namespace',
    c.namespace,
    '--create-namespace',
    '--wait',
    '--timeout',
    '120s',
    ...sets,
  ]);
}

/** The sum of `controller_runtime_reconcile_total` over every controller and result. */
function reconciles(exposition: string): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    const m = /^controller_runtime_reconcile_total(?:\{[^}]*\})? (\S+)/.exec(line);
    if (m) sum += Number(m[1]);
  }
  return sum;
}

export function describeChartOnNode(env: () => NodeEnv, c: ChartUnderTest): void {
  describe(`${c.operator}: its chart installed with helm on a real node (containerd, kubelet, kube-proxy)`, () => {
    before(async () => {
      await installChart(env(), c);
    });

    it('every pod becomes Ready with its liveness and readiness probes passing, and none restarts', async (t) => {
      const pods = await eventually('two Ready pods', 60_000, async () => {
        const ps = await podsOf(env(), c);
        return ps.length === 2 && ps.every(ready) ? ps : undefined;
      });
      for (const p of pods) {
        for (const ctr of p.spec.containers) {
          assert.ok(ctr.livenessProbe, `${p.metadata.name}/${ctr.name} has a liveness probe`);
          assert.ok(ctr.readinessProbe, `${p.metadata.name}/${ctr.name} has a readiness probe`);
        }
        for (const s of p.status.containerStatuses ?? []) {
          assert.equal(s.restartCount, 0, `${p.metadata.name}/${s.name} restarted`);
        }
        // For the record (issue 39 asks for it): the kubelet's own times.
        const readyAt = p.status.conditions?.find((x) => x.type === 'Ready')?.lastTransitionTime;
        const startedAt = p.status.containerStatuses?.[0]?.state?.running?.startedAt;
        if (readyAt && p.status.startTime && startedAt) {
          const s = (a: string, b: string): string => ((Date.parse(b) - Date.parse(a)) / 1000).toFixed(0);
          t.diagnostic(
            `${p.metadata.name}: pod start → Ready ${s(p.status.startTime, readyAt)} s, container start → Ready ${s(startedAt, readyAt)} s (readiness probed every 2 s; times in whole seconds)`,
          );
        }
      }
    });

    it('the runtime enforces the securityContext: a write to / fails, the uid is not 0, no capability, no privilege escalation', async () => {
      const [pod] = await podsOf(env(), c);
      assert.ok(pod);
      const out = await env().kubectl([
        'exec',
        '-n',
        c.namespace,
        pod.metadata.name,
        '--',
        'node',
        '-e',
        INSIDE,
      ]);
      const seen = JSON.parse(out.trim().split('\n').pop() ?? '{}') as {
        write: string;
        uid: number;
        capEff: string;
        noNewPrivs: string;
      };
      assert.deepEqual(seen, { write: 'EROFS', uid: 65532, capEff: '0000000000000000', noNewPrivs: '1' });
    });

    it('/metrics answers a token the metrics-reader ClusterRole allows, and refuses no token (401) and a token without it (403)', async () => {
      const e = env();
      const ns = c.namespace;
      await e.kubectl(
        ['apply', '-f', '-'],
        `apiVersion: v1
kind: ServiceAccount
metadata: { name: e2e-scraper, namespace: ${ns} }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: e2e-stranger, namespace: ${ns} }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: e2e-scraper-${ns} }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${c.metrics.readerClusterRole} }
subjects: [{ kind: ServiceAccount, name: e2e-scraper, namespace: ${ns} }]
`,
      );
      try {
        const scraper = (await e.kubectl(['create', 'token', 'e2e-scraper', '-n', ns])).trim();
        const stranger = (await e.kubectl(['create', 'token', 'e2e-stranger', '-n', ns])).trim();
        const [pod] = await podsOf(e, c);
        const ip = pod?.status.podIP;
        assert.ok(ip);
        assert.equal(await scrape(ip, c.metrics.port, undefined), 401);
        assert.equal(await scrape(ip, c.metrics.port, stranger), 403);
        // RBAC's cache: the binding is seen by the authorizer within a moment.
        await eventually('the scraper allowed', 10_000, async () =>
          (await scrape(ip, c.metrics.port, scraper)) === 200 ? true : undefined,
        );
      } finally {
        // The binding stays for the failover test's scrape; the uninstall test removes it.
      }
    });

    c.golden(env);

    it('only the leader reconciles; the leader pod deleted, the other replica holds the Lease within its duration and reconciles', async () => {
      const e = env();
      const holder = await eventually('a leader', 30_000, async () => (await leaseHolder(e, c)) || undefined);
      const pods = await podsOf(e, c);
      const leader = pods.find((p) => holder.startsWith(`${p.metadata.name}_`) || holder === p.metadata.name);
      const other = pods.find((p) => p !== leader);
      assert.ok(
        leader && other,
        `the holder ${holder} is one of ${pods.map((p) => p.metadata.name).join(', ')}`,
      );
      const duration = Number(
        await e.kubectl([
          'get',
          'lease',
          c.lease,
          '-n',
          c.namespace,
          '-o',
          'jsonpath={.spec.leaseDurationSeconds}',
        ]),
      );
      // Only the leader reconciles: the other replica's controllers have counted nothing.
      const token = (await e.kubectl(['create', 'token', 'e2e-scraper', '-n', c.namespace])).trim();
      const standby = await scrapeBody(other.status.podIP ?? '', c.metrics.port, token);
      assert.equal(standby.status, 200);
      assert.equal(reconciles(standby.body), 0, 'the standby replica reconciled while the other led');
      const started = Date.now();
      await e.kubectl(['delete', 'pod', '-n', c.namespace, leader.metadata.name, '--wait=false']);
      const next = await eventually('the other replica leads', (duration + 10) * 1000, async () => {
        const h = await leaseHolder(e, c);
        return h.startsWith(`${other.metadata.name}_`) || h === other.metadata.name ? h : undefined;
      });
      const seconds = (Date.now() - started) / 1000;
      assert.ok(seconds <= duration + 2, `took over in ${seconds} s; the lease lasts ${duration} s`);
      assert.ok(next);
      // And now it does: the one replica left reconciles.
      await eventually('the new leader reconciles', 30_000, async () => {
        const m = await scrapeBody(other.status.podIP ?? '', c.metrics.port, token);
        return reconciles(m.body) > 0 ? true : undefined;
      });
    });

    it('helm test passes', async () => {
      await env().helm(['test', c.release, '--namespace', c.namespace, '--timeout', '120s']);
    });

    it('helm uninstall leaves no object, binding or finalizer of the release behind', async () => {
      const e = env();
      await c.cleanUp?.(e);
      await e.kubectl(['delete', 'clusterrolebinding', `e2e-scraper-${c.namespace}`, '--ignore-not-found']);
      await e.helm(['uninstall', c.release, '--namespace', c.namespace, '--wait', '--timeout', '120s']);
      // Pods end after their grace period: what remains after that is left behind. The
      // kinds are listed again each time: another release's CRDs may go meanwhile.
      const leftovers = async (): Promise<string> => {
        const kinds = (await e.kubectl(['api-resources', '--verbs=list', '-o', 'name']))
          .split('\n')
          .map((k) => k.trim())
          // Events are history, not objects the release owns.
          .filter((k) => k && k !== 'events' && k !== 'events.events.k8s.io');
        return (
          await e.kubectl([
            'get',
            kinds.join(','),
            '--all-namespaces',
            '-l',
            `app.kubernetes.io/instance=${c.release}`,
            '-o',
            'name',
          ])
        ).trim();
      };
      let left = '(never listed)';
      await eventually('nothing of the release', 60_000, async () => {
        left = await leftovers();
        return left === '' ? true : undefined;
      }).catch(() => undefined);
      assert.equal(left, '', `objects labelled with the release remain:\n${left}`);
      const clusterRbac = (await e.kubectl(['get', 'clusterroles,clusterrolebindings', '-o', 'name']))
        .split('\n')
        .filter((n) => n.includes(`/${c.namespace}-`));
      assert.deepEqual(clusterRbac, [], 'cluster RBAC named after the release namespace remains');
      // A namespace deletes only when nothing in it holds a finalizer.
      await e.kubectl(['delete', 'namespace', c.namespace, '--wait=true', '--timeout=60s']);
    });

    after(async () => {
      // A failed run leaves nothing for the next describe: best effort.
      await env()
        .helm(['uninstall', c.release, '--namespace', c.namespace, '--ignore-not-found'])
        .catch(() => undefined);
    });
  });
}
