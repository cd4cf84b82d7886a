/**
 * The operators' log lines as `npm run up` prints them: pino writes one JSON object a
 * line, which a person reading a terminal does not want; this turns each into
 * `HH:MM:SS weebo-link WARN message key=value …`. Pure, so that it is tested alone;
 * up.ts hooks it into the loggers it gives the operators' local runners.
 */

/** pino's numeric levels, as words. */
const LEVELS: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** pino's own fields, shown in the line's head or not at all. */
const OWN_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'operator', 'v']);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `time` as the local wall clock, to the second: the date is the day's, a run is short. */
function clock(time: unknown): string {
  const d = typeof time === 'number' ? new Date(time) : new Date(Number.NaN);
  if (Number.isNaN(d.getTime())) return '--:--:--';
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** A value as `key=value` shows it: bare when it is one word, else quoted or JSON. */
function show(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  // An error serialized by pino: its message says what a reader needs; the stack is noise here.
  if (isRecord(value) && typeof value.message === 'string' && typeof value.type === 'string') {
    return JSON.stringify(`${value.type}: ${value.message}`);
  }
  return JSON.stringify(value) ?? String(value);
}

/**
 * One line of pino output, readable: time, operator, level, message, then the other
 * fields as key=value. A line that is not pino's JSON is returned as it came.
 */
export function formatLogLine(line: string, fallbackOperator = ''): string {
  const text = line.endsWith('\n') ? line.slice(0, -1) : line;
  let entry: unknown;
  try {
    entry = JSON.parse(text);
  } catch {
    return `${text}\n`;
  }
  if (!isRecord(entry)) return `${text}\n`;
  const level = typeof entry.level === 'number' ? (LEVELS[entry.level] ?? `L${entry.level}`) : 'INFO';
  const operator = typeof entry.operator === 'string' ? entry.operator : fallbackOperator;
  const fields = Object.entries(entry)
    .filter(([k]) => !OWN_FIELDS.has(k))
    .map(([k, v]) => `${k}=${show(v)}`);
  const head = [clock(entry.time), operator, level, typeof entry.msg === 'string' ? entry.msg : '']
    .filter((p) => p !== '')
    .join(' ');
  return `${[head, ...fields].join(' ')}\n`;
}
