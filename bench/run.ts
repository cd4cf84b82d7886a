/**
 * `npm run bench [NAME...]`: runs bench/NAME.bench.ts (all of them without a name), one
 * after the other so they do not compete for the two cores. Each benchmark compares
 * itself with a baseline on this machine and prints the ratio.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = import.meta.dirname;
const all = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.replace(/\.bench\.ts$/, ''))
  .sort();
const asked = process.argv.slice(2);
const unknown = asked.filter((a) => !all.includes(a));
if (unknown.length) {
  process.stderr.write(`no benchmark named ${unknown.join(', ')}; there are: ${all.join(', ')}\n`);
  process.exit(2);
}
let failed = 0;
for (const name of asked.length ? asked : all) {
  process.stdout.write(`\n=== ${name} ===\n`);
  const r = spawnSync(process.execPath, [join(dir, `${name}.bench.ts`)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
