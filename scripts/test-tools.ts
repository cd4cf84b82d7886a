/**
 * The tools some tests need beyond the control plane (the node's binaries among them), in
 * the order the test run's prebuild obtains them, and which test files use each. Shared by
 * `scripts/test.ts`, which runs the files that need no tool first, and
 * `scripts/prebuild-test-tools.ts`, which builds the tools meanwhile.
 */
import {
  type GoTool,
  goToolBinary,
  obtain,
  resolveNodeBinaries,
  type ToolLog,
} from '@operators/controlplane';
import { SOPS_TOOL } from '../operators/gitops-reverser/test/support/sops-binary.ts';
import { OPA_TOOL } from '../operators/permissions/test/support/opa-binary.ts';
import { REGISTRY_TOOL } from '../packages/controlplane/src/registry.ts';

export interface TestTool {
  readonly name: string;
  /**
   * The test files that use it (paths relative to the repository). Only scheduling rests
   * on this: a file missing here still gets its tool, by waiting on the tool's lock or
   * building it itself.
   */
  readonly usedBy: RegExp;
  /** Returns once it is in the cache, building or downloading it if it is not. */
  readonly get: (log: ToolLog) => Promise<unknown>;
}

const goTool = (tool: GoTool, usedBy: RegExp): TestTool => ({
  name: tool.name,
  usedBy,
  get: (log) => goToolBinary(tool, log),
});

/** Ordered as the sorted test files first need them. */
export const TEST_TOOLS: readonly TestTool[] = [
  {
    name: 'helm',
    usedBy:
      /^operators\/[^/]+\/test\/chart|^operators\/weebo-link\/test\/(blast-radius|check-rules|departure|prometheusrule|resync)\.|^packages\/controlplane\/test\/(binaries|download|releases)\./,
    get: (log) => obtain('helm', log),
  },
  goTool(SOPS_TOOL, /^operators\/gitops-reverser\/test\/(sops-encrypt|e2e-git)\./),
  goTool(OPA_TOOL, /^operators\/permissions\/test\/(e2e-opa|opa-bundle)\./),
  {
    name: 'promtool',
    usedBy:
      /^operators\/weebo-link\/test\/prometheusrule\.|^packages\/controlplane\/test\/(binaries|download|releases)\./,
    get: (log) => obtain('promtool', log),
  },
  goTool(REGISTRY_TOOL, /^packages\/controlplane\/test\/registry\.|^packages\/images\/test\/image-build\./),
  // Last: the longest build (minutes on a new machine), needed only by the end-to-end suite
  // on a real node, which runs beside the rest while this builds.
  {
    name: 'node',
    usedBy: /^e2e\//,
    get: (log) => resolveNodeBinaries(log),
  },
];

/**
 * The position in {@link TEST_TOOLS} of the last tool a file needs, -1 for none: a file
 * can run as soon as the prebuild has got that far.
 */
export function lastToolNeeded(file: string): number {
  let last = -1;
  TEST_TOOLS.forEach((t, i) => {
    if (t.usedBy.test(file)) last = i;
  });
  return last;
}
