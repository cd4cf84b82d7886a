/**
 * weebo-link's metrics on a real apiserver, read both from the registry and from the
 * `/metrics` endpoint a Prometheus scrapes: the targets per rule and state as a source
 * leaves (RFC 0002, Exploitation, Observabilité), and the age of the oldest Detaching
 * target, which the "Detaching for more than 10 minutes" alert reads, counted from what
 * the apiserver recorded (so a restart does not restart it).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { Manager } from '@operators/kit';
import { AUTHENTIK_USER, authentikUser, TEST_CRDS } from '../src/testkit/crds.ts';
import { account, linkNamespaces, startLink, startStalwart, waitState } from './harness.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
});

// A rule name per test: the gauges count targets by their link label, and the shared
// plane keeps the targets of earlier tests (their namespaces stay Terminating).
const ruleName = (what: string): string => `metrics-${what}-${Math.random().toString(36).slice(2, 6)}`;
const TARGETS = 'weebo_link_links_targets';
const OLDEST = 'weebo_link_links_detaching_oldest_seconds';

/** The series of `name` for this rule, keyed by their other labels, from the registry. */
async function fromRegistry(manager: Manager, name: string, rule: string): Promise<Record<string, number>> {
  const m = await manager.registry.getSingleMetric(name)?.get();
  const out: Record<string, number> = {};
  for (const v of m?.values ?? []) if (v.labels.link === rule) out[String(v.labels.state ?? '')] = v.value;
  return out;
}

/** The same, parsed from the text exposition served on `/metrics` (plain HTTP, loopback). */
async function fromEndpoint(manager: Manager, name: string, rule: string): Promise<Record<string, number>> {
  const at = manager.metricsEndpoint;
  assert.ok(at, 'the metrics endpoint listens');
  const res = await fetch(`http://${at.host}:${at.port}/metrics`);
  assert.equal(res.status, 200);
  const out: Record<string, number> = {};
  for (const line of (await res.text()).split('\n')) {
    const m = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`).exec(line);
    if (!m) continue;
    const labels = Object.fromEntries(
      [...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]] as const),
    );
    if (labels.link === rule) out[labels.state ?? ''] = Number(m[2]);
  }
  return out;
}

/** Waits until both the registry and the endpoint show exactly `expected` for the rule. */
async function targetsAre(manager: Manager, rule: string, expected: Record<string, number>): Promise<void> {
  const same = (a: Record<string, number>): boolean =>
    JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(expected).sort());
  await eventually(`${TARGETS} ${JSON.stringify(expected)}`, async () =>
    same(await fromRegistry(manager, TARGETS, rule)) && same(await fromEndpoint(manager, TARGETS, rule))
      ? true
      : undefined,
  );
}

/** When the apiserver says weebo-link's rule last changed the target (its managedFields entry). */
async function appliedAt(mail: string, name: string, rule: string): Promise<number> {
  const a = await account(env, mail, name);
  const entry = a?.metadata.managedFields?.find((e) => e.manager === `weebo-link/${rule}` && !e.subresource);
  assert.ok(entry?.time, `${name} has weebo-link's managedFields entry`);
  return Date.parse(entry.time);
}

/**
 * Reads the oldest-Detaching gauge from the endpoint and checks it against the apiserver's
 * time: (scrape time − `since`) / 1000, bracketed by the clock before and after the scrape.
 */
async function oldestIsCountedFrom(manager: Manager, rule: string, since: number): Promise<void> {
  const lo = (Date.now() - since) / 1000;
  const value = (await fromEndpoint(manager, OLDEST, rule))[''];
  const hi = (Date.now() - since) / 1000;
  assert.ok(
    value !== undefined && value >= lo && value <= hi,
    `${OLDEST}=${value}, expected in [${lo}, ${hi}]`,
  );
}

describe('the metrics', () => {
  it('count targets per state as a source leaves, on the registry and on /metrics', async (t) => {
    const rule = ruleName('targets');
    const { auth, mail, system } = await linkNamespaces(env, t, rule);
    const stalwart = await startStalwart(env, t, mail);
    const link = await startLink(env, t, system, { metrics: { port: 0 } });
    for (const n of ['alice', 'bob', 'carol']) await env.admin.create(authentikUser(n, auth));
    for (const n of ['alice', 'bob', 'carol']) await waitState(env, mail, n, 'Linked');
    await targetsAre(link.manager, rule, { Linked: 3 });
    assert.deepEqual(await fromEndpoint(link.manager, OLDEST, rule), { '': 0 }, 'no Detaching target: 0');

    // With the target operator down, the safe state is never observed: alice stays Detaching.
    await stalwart.stop();
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    await waitState(env, mail, 'alice', 'Detaching', (a) => a.spec?.state === 'Locked');
    await targetsAre(link.manager, rule, { Linked: 2, Detaching: 1 });
    await oldestIsCountedFrom(link.manager, rule, await appliedAt(mail, 'alice', rule));

    // The operator back: the safe state is reached, alice is Detached and nothing is Detaching.
    await startStalwart(env, t, mail);
    await waitState(env, mail, 'alice', 'Detached');
    await targetsAre(link.manager, rule, { Linked: 2, Detached: 1 });
    assert.deepEqual(await fromEndpoint(link.manager, OLDEST, rule), { '': 0 });
  });

  it('the age of a Detaching target survives a restart of weebo-link', async (t) => {
    const rule = ruleName('restart');
    const { auth, mail, system } = await linkNamespaces(env, t, rule);
    const stalwart = await startStalwart(env, t, mail);
    const first = await startLink(env, t, system);
    await env.admin.create(authentikUser('dave', auth));
    await waitState(env, mail, 'dave', 'Linked');
    await stalwart.stop();
    await env.admin.delete(AUTHENTIK_USER, 'dave', auth);
    await waitState(env, mail, 'dave', 'Detaching', (a) => a.spec?.state === 'Locked');
    const since = await appliedAt(mail, 'dave', rule);
    await first.stop();

    // A new process (a restart, a failover) knows since when dave is Detaching: the count
    // goes on from the apiserver's time, not from the new process's start.
    const second = await startLink(env, t, system, { metrics: { port: 0 } });
    await targetsAre(second.manager, rule, { Detaching: 1 });
    await oldestIsCountedFrom(second.manager, rule, since);
  });
});
