/**
 * Obtains the tools some tests need beyond the control plane (helm, sops, OPA, promtool,
 * the registry) while the test run goes on, instead of inside the first test that needs
 * each: on a new machine that is many minutes of compiling that would otherwise stall the
 * run. `scripts/test.ts` starts this niced beside `node --test`; the shared plane waits
 * only for its own binaries (resolvePlaneBinaries), the files that need no tool run first,
 * and a test that needs a tool before it is ready waits on the tool's lock, so nothing is
 * built twice. On a machine that has them cached, it returns at once.
 *
 * Arguments: the selected test files; a tool is obtained only if one of them needs it.
 */
import { TEST_TOOLS } from './test-tools.ts';

const files = process.argv.slice(2);
for (const { name, usedBy, get } of TEST_TOOLS) {
  if (!files.some((f) => usedBy.test(f))) continue;
  try {
    await get((m) => process.stderr.write(`[prebuild ${name}] ${m}\n`));
  } catch (err) {
    // The test that needs it tries again and fails with the full error there.
    process.stderr.write(`[prebuild ${name}] ${err instanceof Error ? err.message : String(err)}\n`);
  }
}
