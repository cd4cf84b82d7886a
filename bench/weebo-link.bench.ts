/**
 * weebo-link at scale (issue 5, Performance): 2,000 annotated AuthentikUsers → time until
 * 2,000 StalwartAccounts are Linked (weebo-link started after the sources exist: list,
 * sync, decide, apply), against a bare loop server-side applying the same 2,000 targets
 * with the same concurrency (8). Target: ratio ≤ 1.3. Then a restart of weebo-link over
 * the 2,000 linked pairs (every target reconciled, as a resync does) must write nothing.
 *
 *   npm run bench -- weebo-link        (N=500 to try it smaller)
 */
import { ControlPlane } from '@operators/controlplane';
import { installCrds } from '@operators/controlplane/testing';
import { KubeClient, type KubeObject } from '@operators/kit';
import { pino } from 'pino';
import { startWeeboLink } from '../operators/weebo-link/src/app.ts';
import { RULES_CONFIGMAP, RULES_KEY } from '../operators/weebo-link/src/controllers/rules.ts';
import { desiredTarget, loadRules } from '../operators/weebo-link/src/domain/index.ts';
import { exampleRules } from '../operators/weebo-link/src/example-rules.ts';
import { authentikUser, STALWART_ACCOUNT, TEST_CRDS } from '../operators/weebo-link/src/testkit/crds.ts';

const N = Number(process.env.N ?? 2000);
const CONCURRENCY = 8;
const quiet = pino({ level: process.env.BENCH_LOG ?? 'silent' });

async function pool<T>(items: readonly T[], n: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++] as T);
    }),
  );
}

async function ns(client: KubeClient, name: string): Promise<void> {
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

async function countLinked(client: KubeClient, mail: string): Promise<number> {
  const { items } = await client.listAll(STALWART_ACCOUNT, {
    namespace: mail,
    labelSelector: 'link.weebo.io/state=Linked',
  });
  return items.length;
}

const plane = await ControlPlane.start({ log: () => {} });
try {
  const client = await KubeClient.load(plane.kubeconfigPath);
  await installCrds(client, TEST_CRDS);
  const users = Array.from({ length: N }, (_, i) => `user-${String(i).padStart(5, '0')}`);

  // Baseline: the same targets, applied by a bare loop.
  await ns(client, 'base-auth');
  await ns(client, 'base-mail');
  const rule = loadRules(
    exampleRules({ sourceNamespace: 'base-auth', targetNamespace: 'base-mail', name: 'bench-baseline' }),
  ).rules[0]!;
  const desired: KubeObject[] = users.map((u) => {
    const d = desiredTarget(rule, {
      ...authentikUser(u, 'base-auth'),
      metadata: { name: u, namespace: 'base-auth', uid: `uid-${u}` },
    });
    if (!d.ok) throw new Error(d.message);
    return d.value;
  });
  let t = performance.now();
  await pool(desired, CONCURRENCY, (o) => client.apply(o, { fieldManager: 'bench', force: true }));
  const bareMs = performance.now() - t;

  // weebo-link.
  for (const n of ['auth', 'mail', 'weebo-link']) await ns(client, n);
  await client.apply(
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: RULES_CONFIGMAP, namespace: 'weebo-link' },
      data: { [RULES_KEY]: exampleRules({ sourceNamespace: 'auth', targetNamespace: 'mail' }) },
    },
    { fieldManager: 'bench', force: true },
  );
  await pool(users, CONCURRENCY, (u) => client.create(authentikUser(u, 'auth')));
  const linkClient = await KubeClient.load(plane.kubeconfigPath);
  let writes = 0;
  const apply = linkClient.apply.bind(linkClient);
  linkClient.apply = ((o: KubeObject, opts: Parameters<KubeClient['apply']>[1]) => {
    writes++;
    return apply(o, opts);
  }) as KubeClient['apply'];
  t = performance.now();
  let link = await startWeeboLink({
    client: linkClient,
    namespace: 'weebo-link',
    logger: quiet,
    concurrency: CONCURRENCY,
  });
  // Watched, not polled: a LIST of N objects every few ms would load the apiserver the baseline does not.
  const watched = link.manager.cache.informer(STALWART_ACCOUNT, {
    labelSelector: 'link.weebo.io/link',
  }).store;
  const linked = (): number =>
    watched
      .list()
      .filter(
        (o) => o.metadata.namespace === 'mail' && o.metadata.labels?.['link.weebo.io/state'] === 'Linked',
      ).length;
  while (linked() < N) await new Promise((r) => setTimeout(r, 20));
  const linkMs = performance.now() - t;
  if ((await countLinked(client, 'mail')) !== N) throw new Error('not every target is Linked');
  const createWrites = writes;
  await link.stop();

  // Resync: a restart reconciles every target (as the periodic resync does) and must write nothing.
  writes = 0;
  link = await startWeeboLink({
    client: linkClient,
    namespace: 'weebo-link',
    logger: quiet,
    concurrency: CONCURRENCY,
  });
  const reconciled = async (): Promise<number> => {
    const m = await link.manager.registry.getSingleMetric('controller_runtime_reconcile_total')?.get();
    return (m?.values ?? [])
      .filter((v) => String(v.labels.controller).startsWith('link-'))
      .reduce((a, v) => a + v.value, 0);
  };
  t = performance.now();
  while ((await reconciled()) < N) await new Promise((r) => setTimeout(r, 100));
  const resyncMs = performance.now() - t;
  await new Promise((r) => setTimeout(r, 500));
  const resyncWrites = writes;
  await link.stop();

  const ratio = linkMs / bareMs;
  process.stdout.write(
    [
      `N = ${N}, concurrency ${CONCURRENCY}`,
      `bare server-side-apply loop: ${bareMs.toFixed(0)} ms`,
      `weebo-link, start to ${N} Linked: ${linkMs.toFixed(0)} ms (${createWrites} applies)`,
      `ratio: ${ratio.toFixed(2)} (target ≤ 1.3)`,
      `resync of ${N} linked pairs: ${resyncMs.toFixed(0)} ms, ${resyncWrites} writes (target 0)`,
      '',
    ].join('\n'),
  );
  await client.transport.close();
  await linkClient.transport.close();
  if (ratio > 1.3 || resyncWrites !== 0) process.exitCode = 1;
} finally {
  await plane.stop();
}
