/** `npm run up`'s readable log lines (scripts/log-lines.ts), one pino line at a time. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatLogLine } from '../log-lines.ts';

/** A pino line at a fixed local time, as a logger writes it. */
const at = (h: number, m: number, s: number): number => new Date(2026, 0, 2, h, m, s).getTime();

describe('formatLogLine', () => {
  it('puts time, operator, level and message first, then the fields as key=value', () => {
    const line = JSON.stringify({
      level: 40,
      time: at(7, 5, 9),
      pid: 1234,
      hostname: 'box',
      operator: 'weebo-link',
      kind: 'StalwartAccount',
      attempt: 3,
      msg: 'watch throttled',
    });
    assert.equal(
      formatLogLine(`${line}\n`),
      '07:05:09 weebo-link WARN watch throttled kind=StalwartAccount attempt=3\n',
    );
  });

  it('quotes a value with spaces, writes objects as JSON and an error as its type and message', () => {
    const line = JSON.stringify({
      level: 50,
      time: at(23, 0, 0),
      operator: 'terdut-operator',
      reason: 'two words',
      key: { namespace: 'ops', name: 'a' },
      err: { type: 'ApiError', message: 'conflict', stack: 'ApiError: conflict\n    at x' },
      msg: 'reconcile failed',
    });
    assert.equal(
      formatLogLine(line),
      '23:00:00 terdut-operator ERROR reconcile failed reason="two words" key={"namespace":"ops","name":"a"} err="ApiError: conflict"\n',
    );
  });

  it('names the operator given when the line has none, and every pino level', () => {
    const levels = [
      [10, 'TRACE'],
      [20, 'DEBUG'],
      [30, 'INFO'],
      [60, 'FATAL'],
    ] as const;
    for (const [level, word] of levels) {
      assert.equal(
        formatLogLine(JSON.stringify({ level, time: at(1, 2, 3), msg: 'm' }), 'exoledge'),
        `01:02:03 exoledge ${word} m\n`,
      );
    }
  });

  it('returns a line that is not pino JSON as it came', () => {
    assert.equal(formatLogLine('[up] installed 3 CRDs\n'), '[up] installed 3 CRDs\n');
    assert.equal(formatLogLine('42'), '42\n');
  });
});
