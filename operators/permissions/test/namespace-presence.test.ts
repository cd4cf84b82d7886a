/**
 * A Scope's namespace checks in client clusters, reused for a moment (src/controllers/
 * namespace-presence.ts): a burst of Scope passes asks each cluster once per namespace, and
 * an answer never outlives its TTL nor survives a failure.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NamespacePresence } from '../src/controllers/namespace-presence.ts';

describe('NamespacePresence', () => {
  it('asks once for a burst of passes within the TTL, and again after it', async () => {
    let now = 0;
    const presence = new NamespacePresence({ ttlMs: 1_000, now: () => now });
    let asked = 0;
    const ask = async () => {
      asked++;
      return true;
    };
    const burst = await Promise.all(Array.from({ length: 300 }, () => presence.exists('f/a', 'team', ask)));
    assert.ok(burst.every((x) => x === true));
    assert.equal(asked, 1);
    now = 999;
    await presence.exists('f/a', 'team', ask);
    assert.equal(asked, 1, 'still within the TTL');
    now = 1_000;
    await presence.exists('f/a', 'team', ask);
    assert.equal(asked, 2, 'the TTL has passed: asked again, so a namespace created meanwhile is seen');
  });

  it('keeps clusters and namespaces apart', async () => {
    const presence = new NamespacePresence({ now: () => 0 });
    assert.equal(await presence.exists('f/a', 'team', async () => true), true);
    assert.equal(await presence.exists('f/b', 'team', async () => false), false);
    assert.equal(await presence.exists('f/a', 'other', async () => false), false);
    assert.equal(await presence.exists('f/a', 'team', async () => false), true);
  });

  it('does not keep a failed question: the next pass asks again', async () => {
    const presence = new NamespacePresence({ now: () => 0 });
    await assert.rejects(
      presence.exists('f/a', 'team', async () => {
        throw new Error('unreachable');
      }),
    );
    assert.equal(await presence.exists('f/a', 'team', async () => true), true);
  });
});
