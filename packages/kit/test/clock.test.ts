/** The fake clock that the queue, backoff and event tests rely on moves only when told, in order. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAKE_CLOCK_EPOCH_MS, FakeClock, realClock, settle, sleep } from '../src/base/clock.ts';

describe('clock: FakeClock', () => {
  it('stands still until advanced, from a fixed epoch', () => {
    const c = new FakeClock();
    assert.equal(c.now(), FAKE_CLOCK_EPOCH_MS);
    c.advance(1500);
    assert.equal(c.now(), FAKE_CLOCK_EPOCH_MS + 1500);
  });

  it('fires due timers in order of due time, ties in the order they were set, each at its own time', () => {
    const c = new FakeClock(0);
    const fired: string[] = [];
    c.setTimeout(() => fired.push(`b@${c.now()}`), 20);
    c.setTimeout(() => fired.push(`a@${c.now()}`), 10);
    c.setTimeout(() => fired.push(`c@${c.now()}`), 20);
    c.setTimeout(() => fired.push(`late@${c.now()}`), 31);
    c.advance(30);
    assert.deepEqual(fired, ['a@10', 'b@20', 'c@20']);
    assert.equal(c.pending, 1);
    assert.equal(c.nextDueIn(), 1);
  });

  it('fires a timer set by a firing timer within the same advance when it falls due', () => {
    const c = new FakeClock(0);
    const fired: number[] = [];
    c.setTimeout(() => {
      fired.push(c.now());
      c.setTimeout(() => fired.push(c.now()), 5);
    }, 5);
    c.advance(10);
    assert.deepEqual(fired, [5, 10]);
  });

  it('does not fire a cleared timer', () => {
    const c = new FakeClock(0);
    let fired = false;
    const t = c.setTimeout(() => {
      fired = true;
    }, 1);
    c.clearTimeout(t);
    c.advance(10);
    assert.equal(fired, false);
    assert.equal(c.nextDueIn(), undefined);
  });

  it('advanceAsync lets awaiting code run between timers', async () => {
    const c = new FakeClock(0);
    const log: number[] = [];
    const loop = (async () => {
      for (let i = 0; i < 3; i++) {
        await sleep(c, 10);
        log.push(c.now());
      }
    })();
    await c.advanceAsync(30);
    await loop;
    assert.deepEqual(log, [10, 20, 30]);
  });

  it('sleep rejects with the abort reason and cancels its timer', async () => {
    const c = new FakeClock(0);
    const ac = new AbortController();
    const s = sleep(c, 1000, ac.signal);
    ac.abort(new Error('stopping'));
    await assert.rejects(s, /stopping/);
    assert.equal(c.pending, 0);
  });
});

describe('clock: realClock', () => {
  it('fires after the delay and its timers do not keep the process alive', async () => {
    const start = realClock.now();
    await sleep(realClock, 20);
    assert.ok(realClock.now() - start >= 19);
    const t = realClock.setTimeout(() => undefined, 60_000);
    assert.equal((t as unknown as NodeJS.Timeout).hasRef(), false);
    realClock.clearTimeout(t);
    await settle();
  });
});
