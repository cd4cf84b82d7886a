/**
 * wrk (Debian's `wrk`, a C load generator) for a benchmark's maximum-rate runs. Node's
 * own generators (autocannon) spend more CPU per request than a bare node:http server
 * does to answer it, so on a two-core machine they, not the server, set the pace: a
 * bare server then runs at 75% of its core and any server a little dearer looks as fast.
 * wrk needs about a third of a core for what saturates the server, so the rate measured
 * is the server's.
 *
 * Each run cycles over the requests given (method, path, headers), one wrk thread per
 * run, and reports what wrk counts: responses, their status codes (a Lua `response`
 * hook), socket errors and the latency percentiles of its own histogram.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

export interface WrkRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface WrkOptions {
  readonly url: string;
  readonly connections: number;
  readonly seconds: number;
  readonly requests: readonly WrkRequest[];
}

export interface WrkResult {
  readonly responses: number;
  readonly seconds: number;
  readonly statuses: ReadonlyMap<number, number>;
  /** Connect, read and write errors and timeouts, all together. */
  readonly socketErrors: number;
  readonly p99Ms: number;
}

/** A Lua string literal: wrk's Lua is 5.1 (LuaJIT), whose `"\ddd"` escapes (three decimal digits) take any byte. */
function luaString(s: string): string {
  return `"${[...Buffer.from(s, 'utf8')].map((b) => (b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c ? String.fromCharCode(b) : `\\${String(b).padStart(3, '0')}`)).join('')}"`;
}

/** The script: the requests formatted once per thread, statuses counted, a summary printed by `done`. */
export function wrkScript(requests: readonly WrkRequest[]): string {
  const entries = requests.map((r) => {
    const headers = Object.entries(r.headers)
      .map(([k, v]) => `[${luaString(k)}] = ${luaString(v)}`)
      .join(', ');
    return `  { ${luaString(r.method)}, ${luaString(r.path)}, { ${headers} } },`;
  });
  return `-- written by bench/support/wrk.ts
local specs = {
${entries.join('\n')}
}
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  formatted = {}
  for i, s in ipairs(specs) do formatted[i] = wrk.format(s[1], s[2], s[3]) end
  statuses = {}
  n = 0
end
function request()
  n = n % #formatted + 1
  return formatted[n]
end
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("bench responses %d\\n", summary.requests))
  io.write(string.format("bench micros %d\\n", summary.duration))
  io.write(string.format("bench errors %d\\n", e.connect + e.read + e.write + e.timeout))
  io.write(string.format("bench p99 %d\\n", latency:percentile(99)))
  for _, t in ipairs(threads) do
    for code, count in pairs(t:get("statuses")) do io.write(string.format("bench status %d %d\\n", code, count)) end
  end
end
`;
}

/** Parses the lines `done` writes. */
export function parseWrkSummary(stdout: string): WrkResult {
  const values = new Map<string, number>();
  const statuses = new Map<number, number>();
  for (const line of stdout.split('\n')) {
    const m = /^bench (\w+) (-?\d+)(?: (\d+))?$/.exec(line.trim());
    if (m === null) continue;
    if (m[1] === 'status') statuses.set(Number(m[2]), (statuses.get(Number(m[2])) ?? 0) + Number(m[3]));
    else values.set(m[1]!, Number(m[2]));
  }
  const need = (k: string): number => {
    const v = values.get(k);
    if (v === undefined) throw new Error(`wrk printed no "${k}": ${stdout.slice(0, 500)}`);
    return v;
  };
  return {
    responses: need('responses'),
    seconds: need('micros') / 1e6,
    socketErrors: need('errors'),
    p99Ms: need('p99') / 1000,
    statuses,
  };
}

/** One wrk run; the summary it printed. */
export async function wrk(options: WrkOptions): Promise<WrkResult> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-wrk-'));
  try {
    const script = join(dir, 'requests.lua');
    await writeFile(script, wrkScript(options.requests));
    const { stdout } = await execFileP(
      'wrk',
      [
        '-t1',
        `-c${options.connections}`,
        `-d${options.seconds}s`,
        '--timeout',
        '10s',
        '-s',
        script,
        options.url,
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    return parseWrkSummary(stdout);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
