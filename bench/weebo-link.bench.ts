/**
 * weebo-link at scale (issue 5, Performance): 2,000 annotated AuthentikUsers → time until
 * 2,000 StalwartAccounts are Linked, against a bare loop server-side applying the same
 * 2,000 targets with the same concurrency (8). Target: ratio ≤ 1.3. Then a restart of
 * weebo-link over the 2,000 linked pairs (every target reconciled, as a resync does) must
 * write nothing.
 *
 * weebo-link's time runs from its start (the sources exist already) to the last target
 * seen Linked: it includes loading the rules, discovery, the initial lists of sources and
 * targets and the cache sync, then one decision and one apply per target. The bare loop
 * runs last, once weebo-link is stopped, so that neither run shares the apiserver with
 * the other and weebo-link's initial list of link-labelled targets does not include the
 * baseline's 2,000 (labelled for a rule that does not exist: orphans it would list and
 * count). Running a bare loop before or after the others makes no measurable difference.
 *
 *   npm run bench -- weebo-link        (N=500 to try it smaller)
 */
import { ControlPlane } from '@operators/controlplane';
import { eventually, installCrds } from '@operators/controlplane/testing';
import { KubeClient, type KubeObject } from '@operators/kit';
import { pino } from 'pino';
import { startWeeboLink } from '../operators/weebo-link/src/app.ts';
import { RULES_CONFIGMAP, RULES_KEY } from '../operators/weebo-link/src/controllers/rules.ts';
import { desiredTarget, loadRules } from '../operators/weebo-link/src/domain/index.ts';
import { exampleRules } from '../operators/weebo-link/src/example-rules.ts';
import {
  AUTHENTIK_USER,
  authentikUser,
  STALWART_ACCOUNT,
  TEST_CRDS,
} from '../operators/weebo-link/src/testkit/crds.ts';

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

  // The sources exist before weebo-link starts.
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
  // A CRD just installed has its apiserver watch cache still initialising (lists answer 429
  // for about a second): wait until both kinds are served from it, as on a live cluster.
  for (const kind of [STALWART_ACCOUNT, AUTHENTIK_USER])
    await eventually(`${kind.kind} listed`, async () => (await client.list(kind)) && true);
  const linkClient = await KubeClient.load(plane.kubeconfigPath);
  // Every write weebo-link sends, Events apart (counted on their own).
  let writes = 0;
  let events = 0;
  const request = linkClient.transport.request.bind(linkClient.transport);
  linkClient.transport.request = (<T>(o: Parameters<typeof request>[0]): Promise<T> => {
    if (o.method !== 'GET') {
      if (o.path.startsWith('/apis/events.k8s.io/')) events++;
      else writes++;
    }
    return request<T>(o);
  }) as typeof request;
  let t = performance.now();
  let link = await startWeeboLink({
    client: linkClient,
    namespace: 'weebo-link',
    logger: quiet,
    concurrency: CONCURRENCY,
  });
  // Watched, not polled: a LIST of N objects every few ms would load the apiserver the
  // baseline does not; and counted as the changes come, not by scanning the store.
  const watched = link.manager.cache.informer(STALWART_ACCOUNT, {
    labelSelector: 'link.weebo.io/link',
  });
  const linked = new Set<string>();
  const track = (o: KubeObject, gone = false): void => {
    const key = `${o.metadata.namespace}/${o.metadata.name}`;
    if (!gone && o.metadata.namespace === 'mail' && o.metadata.labels?.['link.weebo.io/state'] === 'Linked')
      linked.add(key);
    else linked.delete(key);
  };
  watched.onDelta((d) => track(d.object, d.type === 'deleted'));
  for (const o of watched.store.list()) track(o);
  while (linked.size < N) await new Promise((r) => setTimeout(r, 20));
  const linkMs = performance.now() - t;
  if ((await countLinked(client, 'mail')) !== N) throw new Error('not every target is Linked');
  const createWrites = writes;
  const createEvents = events;
  await link.stop();

  // Resync: a restart reconciles every target (as the periodic resync does) and must write nothing.
  writes = 0;
  events = 0;
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
  const resyncEvents = events;
  await link.stop();

  // Baseline: the same targets, applied by a bare loop (weebo-link stopped).
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
  t = performance.now();
  await pool(desired, CONCURRENCY, (o) => client.apply(o, { fieldManager: 'bench', force: true }));
  const bareMs = performance.now() - t;

  const ratio = linkMs / bareMs;
  process.stdout.write(
    [
      `N = ${N}, concurrency ${CONCURRENCY}`,
      `bare server-side-apply loop: ${bareMs.toFixed(0)} ms`,
      `weebo-link, from its start (rules, discovery, initial lists, sync) to ${N} Linked: ${linkMs.toFixed(0)} ms (${createWrites} writes, ${createEvents} Events)`,
      `ratio: ${ratio.toFixed(2)} (target ≤ 1.3)`,
      `resync of ${N} linked pairs: ${resyncMs.toFixed(0)} ms, ${resyncWrites} writes (target 0), ${resyncEvents} Events (the restart's RuleLoaded)`,
      '',
    ].join('\n'),
  );
  await client.transport.close();
  await linkClient.transport.close();
  if (ratio > 1.3 || resyncWrites !== 0) process.exitCode = 1;
} finally {
  await plane.stop();
}
