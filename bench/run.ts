/**
 * `npm run bench [NAME...] [-- --flag value...]`: runs bench/NAME.bench.ts (all of them
 * without a name), one after the other so they do not compete for the two cores. Each
 * benchmark compares itself with a baseline on this machine and prints the ratio.
 * Arguments from the first one starting with `-` on are passed to every benchmark run
 * (`npm run bench:blocklist -- --runs 7`).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = import.meta.dirname;
const all = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.replace(/\.bench\.ts$/, ''))
  .sort();
const args = process.argv.slice(2);
const firstFlag = args.findIndex((a) => a.startsWith('-'));
const asked = firstFlag < 0 ? args : args.slice(0, firstFlag);
// `--` is npm's separator; called directly (`node bench/run.ts x -- --flag`) it must not reach a bench's parseArgs.
const passed = firstFlag < 0 ? [] : args.slice(firstFlag).filter((a) => a !== '--');
const unknown = asked.filter((a) => !all.includes(a));
if (unknown.length) {
  process.stderr.write(`no benchmark named ${unknown.join(', ')}; there are: ${all.join(', ')}\n`);
  process.exit(2);
}
let failed = 0;
for (const name of asked.length ? asked : all) {
  process.stdout.write(`\n=== ${name} ===\n`);
  const r = spawnSync(process.execPath, [join(dir, `${name}.bench.ts`), ...passed], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
