/**
 * Builds the Go tools some tests check our output against (sops, OPA) while the test run
 * starts, instead of inside the first test that needs each: on a new machine that is
 * several minutes of compiling that would otherwise stall the run. `scripts/test.ts`
 * starts this niced beside `node --test`; a test that needs a tool before its build ends
 * waits on the build's lock (goToolBinary), so nothing is built twice. On a machine that
 * has them cached, it returns at once.
 *
 * Arguments: the selected test files; a tool is built only if one of them needs it.
 */
import { type GoTool, goToolBinary } from '@operators/controlplane';
import { SOPS_TOOL } from '../operators/gitops-reverser/test/support/sops-binary.ts';
import { OPA_TOOL } from '../operators/permissions/test/support/opa-binary.ts';
import { REGISTRY_TOOL } from '../packages/controlplane/src/registry.ts';

/** Which test folders use which tool. */
const TOOLS: readonly { readonly tool: GoTool; readonly usedBy: string }[] = [
  { tool: SOPS_TOOL, usedBy: 'operators/gitops-reverser/test/' },
  { tool: OPA_TOOL, usedBy: 'operators/permissions/test/' },
  { tool: REGISTRY_TOOL, usedBy: 'packages/controlplane/test/registry' },
];

const files = process.argv.slice(2);
for (const { tool, usedBy } of TOOLS) {
  if (!files.some((f) => f.startsWith(usedBy))) continue;
  try {
    await goToolBinary(tool, (m) => process.stderr.write(`[prebuild ${tool.name}] ${m}\n`));
  } catch (err) {
    // The test that needs it builds it again and fails with the full error there.
    process.stderr.write(`[prebuild ${tool.name}] ${err instanceof Error ? err.message : String(err)}\n`);
  }
}
