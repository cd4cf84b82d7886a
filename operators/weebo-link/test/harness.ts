/** What the integration tests share: namespaces, the rules ConfigMap, weebo-link and the fake Stalwart. */
import type { TestContext } from 'node:test';
import { eventually, type TestEnv } from '@operators/controlplane/testing';
import type { KubeClient, KubeObject, Manager } from '@operators/kit';
import { pino } from 'pino';
import { parse } from 'yaml';
import { startWeeboLink, type WeeboLink, type WeeboLinkOptions } from '../src/app.ts';
import { renderChart } from '../src/chart.ts';
import { RULES_CONFIGMAP, RULES_KEY } from '../src/controllers/rules.ts';
import { exampleRules } from '../src/example-rules.ts';
import { STALWART_ACCOUNT, type StalwartAccount } from '../src/testkit/crds.ts';
import { type FakeStalwart, fakeStalwartRbac, startFakeStalwart } from '../src/testkit/fake-stalwart.ts';

export const quiet = pino({ level: process.env.WEEBO_LINK_TEST_LOG ?? 'silent' });

export interface Link {
  readonly auth: string;
  readonly mail: string;
  readonly system: string;
  readonly rule: string;
}

/** Three namespaces (sources, targets, weebo-link's own) and the RFC rule between them. */
export async function linkNamespaces(
  env: TestEnv,
  t: TestContext,
  rule = 'authentik-user-stalwart-account',
): Promise<Link> {
  const auth = await env.namespace(t, 'auth');
  const mail = await env.namespace(t, 'mail');
  const system = await env.namespace(t, 'weebo-link');
  await writeRules(
    env.admin,
    system,
    exampleRules({ sourceNamespace: auth, targetNamespace: mail, name: rule }),
  );
  return { auth, mail, system, rule };
}

export async function writeRules(client: KubeClient, namespace: string, yaml: string): Promise<void> {
  await client.apply(
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: RULES_CONFIGMAP, namespace },
      data: { [RULES_KEY]: yaml },
    },
    { fieldManager: 'helm', force: true },
  );
}

export async function startLink(
  env: TestEnv,
  t: TestContext,
  system: string,
  opts: Partial<WeeboLinkOptions> = {},
): Promise<WeeboLink> {
  const app = await startWeeboLink({
    client: env.admin,
    namespace: system,
    logger: quiet,
    resyncMs: 60_000,
    ...opts,
  });
  t.after(() => app.stop());
  return app;
}

const RBAC_KINDS = new Set(['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding']);

/**
 * The RBAC objects the chart renders for these rules (whatever shape it has today: one
 * ClusterRole or namespaced Roles), applied as they are, removed with the test: run
 * weebo-link with `env.asServiceAccount(system, 'weebo-link')` to act with exactly them.
 */
export async function applyChartRbac(
  env: TestEnv,
  t: TestContext,
  helm: string,
  system: string,
  rulesYaml: string,
): Promise<KubeObject[]> {
  const { objects } = await renderChart(helm, {
    namespace: system,
    values: { ...(parse(rulesYaml) as object), policies: { enabled: false } },
  });
  const rbac = objects.filter((o) => RBAC_KINDS.has(o.kind ?? ''));
  for (const o of rbac) await env.admin.apply(o, { fieldManager: 'helm', force: true });
  t.after(async () => {
    for (const o of rbac.filter((x) => !x.metadata.namespace))
      await env.admin
        .delete({ apiVersion: o.apiVersion ?? '', kind: o.kind ?? '' }, o.metadata.name ?? '')
        .catch(() => undefined);
  });
  return rbac;
}

/** The fake Stalwart, acting as its own service account (as link-targets sees it). */
export async function startStalwart(env: TestEnv, t: TestContext, mail: string): Promise<FakeStalwart> {
  for (const o of fakeStalwartRbac()) await env.admin.apply(o, { fieldManager: 'tests', force: true });
  const s = await startFakeStalwart({
    client: env.asServiceAccount('stalwart', 'weebo-stalwart'),
    namespace: mail,
    logger: quiet,
  });
  t.after(() => s.stop());
  return s;
}

export function account(env: TestEnv, mail: string, name: string): Promise<StalwartAccount | undefined> {
  return env.admin.find<StalwartAccount>(STALWART_ACCOUNT, name, mail);
}

export function stateOf(a: KubeObject | undefined): string | undefined {
  return a?.metadata.labels?.['link.weebo.io/state'];
}

/** Waits for the account to reach a state (and optionally a predicate). */
export function waitState(
  env: TestEnv,
  mail: string,
  name: string,
  state: string,
  extra: (a: StalwartAccount) => boolean = () => true,
  timeoutMs = 20_000,
): Promise<StalwartAccount> {
  return eventually(
    `${mail}/${name} ${state}`,
    async () => {
      const a = await account(env, mail, name);
      return a && stateOf(a) === state && extra(a) ? a : undefined;
    },
    timeoutMs,
  );
}

/** The reasons of the Events about an object, oldest first. */
export async function eventReasons(client: KubeClient, namespace: string, name: string): Promise<string[]> {
  return (await eventsAbout(client, namespace, name)).map((e) => e.reason);
}

/** The Events about an object (type, reason, note), oldest first. */
export async function eventsAbout(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<{ type: string; reason: string; note: string }[]> {
  const { items } = await client.listAll<
    KubeObject & {
      type?: string;
      reason?: string;
      note?: string;
      regarding?: { name?: string };
      eventTime?: string;
    }
  >({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }, { namespace });
  return items
    .filter((e) => e.regarding?.name === name)
    .sort((a, b) => (a.eventTime ?? '').localeCompare(b.eventTime ?? ''))
    .map((e) => ({ type: e.type ?? '', reason: e.reason ?? '', note: e.note ?? '' }));
}

/**
 * The value of the first series of `name` carrying `labels`, 0 when there is none: for
 * counters (no series before the first increment) and conditions awaited with
 * `eventually`. To assert that a series exists, with value 0 or not, use {@link metricSample}.
 */
export async function metricValue(
  manager: Manager,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return (await metricSample(manager, name, labels)) ?? 0;
}

/** The value of the first series of `name` carrying `labels`; undefined when the metric or the series is missing. */
export async function metricSample(
  manager: Manager,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const m = await manager.registry.getSingleMetric(name)?.get();
  const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value;
}
