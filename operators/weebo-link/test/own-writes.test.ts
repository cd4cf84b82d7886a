/**
 * OwnWrites: the link runtime's memory of its own writes until its labelled cache shows
 * them. Pure: deltas and a clock in, answers out.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject, StoreDelta } from '@operators/kit';
import { OWN_WRITE_GRACE_MS, OwnWrites } from '../src/controllers/own-writes.ts';

function target(name: string, rv: string, state: string): KubeObject {
  return {
    apiVersion: 'stalwart.weebo.io/v1alpha1',
    kind: 'StalwartAccount',
    metadata: {
      name,
      namespace: 'mail',
      resourceVersion: rv,
      labels: { 'link.weebo.io/link': 'l', 'link.weebo.io/state': state },
    },
  };
}

const added = (o: KubeObject): StoreDelta<KubeObject> => ({ type: 'added', object: o });
const updated = (o: KubeObject, old: KubeObject): StoreDelta<KubeObject> => ({
  type: 'updated',
  object: o,
  old,
});

function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

/** A write answered with `answer`, nothing seen while in flight. */
function wrote(w: OwnWrites, answer: KubeObject): boolean {
  const key = `${answer.metadata.namespace}/${answer.metadata.name}`;
  w.writing(key);
  return w.answered(key, answer);
}

describe('own writes', () => {
  it('the echo of a write that left the target Linked is skipped, once', () => {
    const w = new OwnWrites();
    assert.equal(wrote(w, target('alice', '10', 'Linked')), false);
    assert.equal(w.echo(added(target('alice', '10', 'Linked'))), true);
    // The same version again (a relist) is a change to look at: the entry is gone.
    assert.equal(w.echo(added(target('alice', '10', 'Linked'))), false);
    assert.equal(w.size, 0);
  });

  it('the echo of a Detaching or Detached write is reconciled: safe is evaluated, a waiting source reattaches', () => {
    const w = new OwnWrites();
    wrote(w, target('alice', '10', 'Detaching'));
    wrote(w, target('bob', '11', 'Detached'));
    assert.equal(w.echo(added(target('alice', '10', 'Detaching'))), false);
    assert.equal(w.echo(added(target('bob', '11', 'Detached'))), false);
    assert.equal(w.size, 0);
  });

  it('an echo that comes before the answer is held, and needs no reconcile once the answer matches', () => {
    const w = new OwnWrites();
    w.writing('mail/alice');
    assert.equal(w.echo(added(target('alice', '10', 'Linked'))), true);
    assert.equal(w.answered('mail/alice', target('alice', '10', 'Linked')), false);
    assert.equal(w.size, 0);
    assert.equal(w.behind('mail/alice'), false);
  });

  it('a change held during the apply that is not its echo asks for a reconcile once answered', () => {
    const w = new OwnWrites();
    w.writing('mail/alice');
    const before = target('alice', '9', 'Linked');
    assert.equal(w.echo(updated(target('alice', '10', 'Linked'), before)), true);
    assert.equal(w.echo(updated(target('alice', '11', 'Linked'), before)), true);
    assert.equal(w.answered('mail/alice', target('alice', '10', 'Linked')), true);
    // A Detaching echo seen before the answer asks for one too; so does a failed apply that saw changes.
    w.writing('mail/bob');
    w.echo(added(target('bob', '20', 'Detaching')));
    assert.equal(w.answered('mail/bob', target('bob', '20', 'Detaching')), true);
    w.writing('mail/carol');
    w.echo({ type: 'deleted', object: target('carol', '30', 'Linked') });
    assert.equal(w.answered('mail/carol', undefined), true);
    w.writing('mail/dave');
    assert.equal(w.answered('mail/dave', undefined), false);
    assert.equal(w.size, 0);
  });

  it('another version than the written one is reconciled, and ends the wait for the echo', () => {
    const w = new OwnWrites();
    const old = target('alice', '9', 'Linked');
    wrote(w, target('alice', '10', 'Linked'));
    assert.equal(w.echo(updated(target('alice', '12', 'Linked'), old)), false);
    assert.equal(w.behind('mail/alice'), false);
    assert.equal(w.echo({ type: 'deleted', object: target('bob', '3', 'Linked') }), false);
  });

  it('the cache is behind a write until its echo, and a reconcile put off then gets the echo', () => {
    const w = new OwnWrites();
    wrote(w, target('alice', '10', 'Linked'));
    assert.equal(w.behind('mail/alice'), true);
    assert.equal(w.behind('mail/bob'), false);
    // A reconcile was deferred: the echo is not skipped, so that it runs.
    assert.equal(w.echo(added(target('alice', '10', 'Linked'))), false);
    assert.equal(w.behind('mail/alice'), false);
  });

  it('a write whose echo never comes stops holding its key after the grace period', () => {
    const c = clock();
    const w = new OwnWrites(c.now);
    wrote(w, target('alice', '10', 'Linked'));
    c.advance(OWN_WRITE_GRACE_MS - 1);
    assert.equal(w.behind('mail/alice'), true);
    c.advance(1);
    assert.equal(w.behind('mail/alice'), false);
    assert.equal(w.size, 0);
  });
});
