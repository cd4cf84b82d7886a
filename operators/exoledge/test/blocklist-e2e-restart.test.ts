/**
 * The operator as a process that comes and goes: a new process on the same cluster
 * writes nothing and reads nothing before the interval when nothing changed; an operator
 * that cannot write its objects says ApplyFailed, naming the object, and recovers once
 * it can. Each test starts the operators it needs on the shared plane, one at a time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually } from '@operators/controlplane/testing';
import { BLOCKLIST_SOURCE, type BlocklistSource } from '../src/api/blocklist-source.ts';
import { Harness, HOUR, MIN } from './support/e2e.ts';
import { expectedSet } from './support/oracle.ts';

let h: Harness;

before(async () => {
  h = await Harness.start();
  await h.startOperator();
});

after(() => h.close());

const condition = (s: BlocklistSource, type: string) => s.status?.conditions?.find((c) => c.type === type);

/** Merges to 10.20.0.0/22, 10.20.8.0/24, 10.20.10.0/24, 2001:db8:20::/48: two shards of 2. */
const LIST = '10.20.0.0/23\n10.20.2.0/24\n10.20.3.0/24\n10.20.8.0/24\n10.20.10.0/24\n2001:db8:20::/48\n';

describe('the operator restarted', () => {
  it('a new operator process with nothing changed writes nothing and reads nothing before the interval', async () => {
    const name = h.uniqueName('restart');
    await h.createSource(name, LIST, { enforce: true, podSelector: {}, shardSize: 2, refreshInterval: '1h' });
    const first = await h.ready(name);
    assert.deepEqual(await h.publishedPrefixes(name), expectedSet(LIST).prefixes);
    await h.settled();
    const versions = await h.versions(name);
    const sourceVersion = (await h.getSource(name)).metadata.resourceVersion;
    const reads = () => h.server.requests.filter((r) => r.path === `/${name}.txt`).length;
    assert.equal(reads(), 1);

    await h.op.stop();
    const second = await h.startOperator();
    const report = await h.reportAfter(name, 0, () => true);
    await h.settled();
    assert.equal(
      report.read,
      undefined,
      'not read: the status shows a read of this spec within the interval',
    );
    // Sources other test files may have left on the shared plane are not this test's business.
    assert.deepEqual(
      second.client.writes.filter((w) => w.includes(name)),
      [],
      'no object and no status written',
    );
    assert.ok(
      report.requeueAfterMs !== undefined &&
        report.requeueAfterMs > 50 * MIN &&
        report.requeueAfterMs <= HOUR,
      `comes back when the hour is up, in ${report.requeueAfterMs} ms`,
    );
    assert.equal(reads(), 1);
    assert.deepEqual(await h.versions(name), versions);
    assert.equal((await h.getSource(name)).metadata.resourceVersion, sourceVersion);

    // Half an hour on, whatever wakes it, it still does not read.
    let since = await h.later(name, 30 * MIN);
    const early = await h.reportAfter(name, since, () => true);
    assert.equal(early.read, undefined);
    assert.equal(reads(), 1);

    // Past the hour it reads (all of it: a new process holds no validators), and an
    // unchanged list rewrites no shard.
    since = await h.later(name, 31 * MIN);
    const due = await h.reportAfter(name, since, (r) => r.read !== undefined);
    assert.deepEqual([due.read?.why, due.read?.result], ['Due', 'Read']);
    assert.equal(due.applied, 0);
    assert.equal(due.deleted, 0);
    assert.equal(reads(), 2);
    await h.settled();
    assert.deepEqual(await h.versions(name), versions);
    assert.equal((await h.getSource(name)).status?.fingerprint, first.status?.fingerprint);
  });
});

describe('an operator that cannot write its objects', () => {
  it('says ApplyFailed naming the ConfigMap it could not write, with an event, and publishes once it can', async (t) => {
    // An operator whose decider namespace does not exist: every ConfigMap write fails.
    const missing = `exoledge-absent-${process.pid}-${Math.random().toString(36).slice(2, 6)}`;
    await h.op.stop();
    await h.startOperator({ deciderNamespace: missing });
    t.after(async () => {
      await h.env.admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, missing).catch(() => undefined);
    });

    const name = h.uniqueName('applyfail');
    const source = await h.createSource(name, LIST, { kind: 'Presumed' });
    const failed = await eventually(`${name} ApplyFailed`, async () => {
      const s = await h.getSource(name);
      return condition(s, 'Ready')?.reason === 'ApplyFailed' ? s : undefined;
    });
    const ready = condition(failed, 'Ready');
    assert.equal(ready?.status, 'False');
    assert.match(ready?.message ?? '', new RegExp(`ConfigMap\\b.*${missing}/blocklist-${name}-0`));
    assert.match(ready?.message ?? '', /not found/i);
    // Nothing was published in full: no fingerprint, no generation in force.
    assert.equal(failed.status?.fingerprint, undefined);
    assert.equal(failed.status?.observedGeneration, undefined);
    const event = await h.eventOf(source.metadata.uid ?? '', 'ApplyFailed');
    assert.equal(event.type, 'Warning');
    assert.match(event.message ?? '', new RegExp(`blocklist-${name}-0`));

    // The namespace appears: the retry (with backoff, not at the next read) publishes.
    await h.env.admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: missing } });
    const published = await h.ready(name);
    assert.equal(published.status?.channel, 'Decider');
    assert.equal(published.status?.fingerprint, expectedSet(LIST).fingerprint);
    const [map, ...others] = await h.env.admin
      .listAll<{
        apiVersion: string;
        kind: string;
        metadata: { name?: string };
        data?: Record<string, string>;
      }>(
        { apiVersion: 'v1', kind: 'ConfigMap' },
        { namespace: missing, labelSelector: `edge.exoledge.io/source=${name}` },
      )
      .then((l) => l.items);
    assert.equal(others.length, 0);
    assert.equal(map?.metadata.name, `blocklist-${name}-0`);
    assert.equal(map?.data?.['prefixes.txt'], `${expectedSet(LIST).prefixes.join('\n')}\n`);
    assert.equal(
      h.server.requests.filter((r) => r.path === `/${name}.txt`).length,
      1,
      'the list was read once: the retries write what memory holds',
    );
    await h.env.admin.delete(BLOCKLIST_SOURCE, name);
    await eventually(`${name} gone`, async () =>
      (await h.env.admin.find(BLOCKLIST_SOURCE, name)) ? undefined : true,
    );
  });
});
