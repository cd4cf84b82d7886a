/**
 * Writes `crds/*.yaml`, one file per kind, from the TypeScript definitions in this
 * folder: `npm run gen-crds -w @operators/gitops-reverser`. A test fails when a committed
 * file differs from what this generates, so the YAML never drifts from the types.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdYaml, type KubeObject } from '@operators/kit';
import { clusterProviderCrd } from './cluster-provider.ts';
import { clusterWatchRuleCrd } from './cluster-watch-rule.ts';
import { commitRequestCrd } from './commit-request.ts';
import { gitProviderCrd } from './git-provider.ts';
import { gitTargetCrd } from './git-target.ts';
import { watchRuleCrd } from './watch-rule.ts';

/** Where the generated CRDs live, relative to the package, and the file each comes from. */
export const CRD_FILES = [
  {
    file: 'crds/clusterproviders.yaml',
    source: 'operators/gitops-reverser/src/api/cluster-provider.ts',
    crds: clusterProviderCrd,
  },
  {
    file: 'crds/gitproviders.yaml',
    source: 'operators/gitops-reverser/src/api/git-provider.ts',
    crds: gitProviderCrd,
  },
  {
    file: 'crds/gittargets.yaml',
    source: 'operators/gitops-reverser/src/api/git-target.ts',
    crds: gitTargetCrd,
  },
  {
    file: 'crds/watchrules.yaml',
    source: 'operators/gitops-reverser/src/api/watch-rule.ts',
    crds: watchRuleCrd,
  },
  {
    file: 'crds/clusterwatchrules.yaml',
    source: 'operators/gitops-reverser/src/api/cluster-watch-rule.ts',
    crds: clusterWatchRuleCrd,
  },
  {
    file: 'crds/commitrequests.yaml',
    source: 'operators/gitops-reverser/src/api/commit-request.ts',
    crds: commitRequestCrd,
  },
] as const;

/** Every configbutler.ai CRD, for installing them all (tests, the chart). */
export function gitopsReverserCrds(): KubeObject[] {
  return CRD_FILES.map(({ crds }) => crds());
}

export function generated(): { path: string; text: string }[] {
  return CRD_FILES.map(({ file, source, crds }) => ({
    path: join(import.meta.dirname, '../..', file),
    text: crdYaml([crds()], source),
  }));
}

if (import.meta.main) {
  for (const { path, text } of generated()) {
    writeFileSync(path, text);
    process.stdout.write(`wrote ${path}\n`);
  }
}
