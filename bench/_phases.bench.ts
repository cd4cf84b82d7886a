// TEMPORARY (not to be kept): the weebo-link bench with phase timing and request counts.
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
const CONCURRENCY = Number(process.env.C ?? 8);
let t0 = 0;
const marks: string[] = [];
const mark = (m: string) => marks.push(`${(performance.now() - t0).toFixed(0).padStart(6)} ms  ${m}`);
let applied = 0;
const logger = pino({ level: 'info' }, {
  write(s: string) {
    const o = JSON.parse(s) as { msg: string };
    if (o.msg === 'target applied') {
      applied++;
      if (applied === 1 || applied === N) mark(`applied #${applied}`);
    } else mark(o.msg);
  },
});
async function pool<T>(items: readonly T[], n: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < items.length) await fn(items[i++] as T); }));
}
const plane = await ControlPlane.start({ log: () => {} });
try {
  const client = await KubeClient.load(plane.kubeconfigPath);
  await installCrds(client, TEST_CRDS);
  const users = Array.from({ length: N }, (_, i) => `user-${String(i).padStart(5, '0')}`);
  for (const n of ['base-auth', 'base-mail', 'auth', 'mail', 'weebo-link'])
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } });
  const rule = loadRules(exampleRules({ sourceNamespace: 'base-auth', targetNamespace: 'base-mail', name: 'bench-baseline' })).rules[0]!;
  const desired: KubeObject[] = users.map((u) => {
    const d = desiredTarget(rule, { ...authentikUser(u, 'base-auth'), metadata: { name: u, namespace: 'base-auth', uid: `uid-${u}` } });
    if (!d.ok) throw new Error(d.message);
    return d.value;
  });
  if (process.env.BARE !== '0') {
  let t = performance.now();
  await pool(desired, CONCURRENCY, (o) => client.apply(o, { fieldManager: 'bench', force: true }));
  console.log(`bare: ${(performance.now() - t).toFixed(0)} ms`);
  }
  await client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: RULES_CONFIGMAP, namespace: 'weebo-link' },
    data: { [RULES_KEY]: exampleRules({ sourceNamespace: 'auth', targetNamespace: 'mail' }) } }, { fieldManager: 'bench', force: true });
  await pool(users, CONCURRENCY, (u) => client.create(authentikUser(u, 'auth')));
  const linkClient = await KubeClient.load(plane.kubeconfigPath);
  const counts = new Map<string, number>();
  const req = linkClient.transport.request.bind(linkClient.transport);
  linkClient.transport.request = (<T>(o: Parameters<typeof req>[0]) => {
    const k = `${o.method} ${o.path.replace(/\/[^/]*$/, '/*')}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
    return req<T>(o);
  }) as typeof req;
  t0 = performance.now();
  const link = await startWeeboLink({ client: linkClient, namespace: 'weebo-link', logger, concurrency: CONCURRENCY });
  mark('startWeeboLink returned');
  const watched = link.manager.cache.informer(STALWART_ACCOUNT, { labelSelector: 'link.weebo.io/link' }).store;
  const linked = () => watched.list().filter((o) => o.metadata.namespace === 'mail' && o.metadata.labels?.['link.weebo.io/state'] === 'Linked').length;
  while (linked() < N) await new Promise((r) => setTimeout(r, 20));
  mark('all Linked seen');
  await link.stop();
  console.log(marks.join('\n'));
  console.log([...counts].map(([k, v]) => `${v}\t${k}`).join('\n'));
  await client.transport.close();
  await linkClient.transport.close();
} finally {
  await plane.stop();
}
