/** The commit window: a Go duration from 0s to 24h, both included. Expected values are literal. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseWindowMs } from '../src/domain/mirror/window.ts';

describe('commit window', () => {
  it('reads Go durations from 0s to 24h as milliseconds', () => {
    const cases: [string, number][] = [
      ['0', 0],
      ['0s', 0],
      ['1500ms', 1_500],
      ['1.5s', 1_500],
      ['30s', 30_000],
      ['5m', 300_000],
      ['1h30m', 5_400_000],
      ['23h59m59.999s', 86_399_999],
      ['24h', 86_400_000],
      ['1440m', 86_400_000],
      ['86400s', 86_400_000],
    ];
    for (const [text, ms] of cases) assert.equal(parseWindowMs(text), ms, text);
  });

  it('refuses windows over 24h and what is not a duration', () => {
    for (const text of ['24h0.001s', '24h1ms', '25h', '1441m', '-1s', '', ' 5s', '5', '1d', '5us', 'soon']) {
      assert.equal(parseWindowMs(text), undefined, JSON.stringify(text));
    }
  });

  it('accepts every whole number of milliseconds up to a day, and none beyond', () => {
    fc.assert(
      fc.property(fc.nat({ max: 2 * 86_400_000 }), (ms) => {
        assert.equal(parseWindowMs(`${ms}ms`), ms <= 86_400_000 ? ms : undefined);
      }),
    );
  });
});
