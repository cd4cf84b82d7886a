/**
 * Writes `crds/blocklistsources.yaml` and `crds/edgesites.yaml` from the TypeScript
 * definitions in this folder:
 * `npm run gen-crds -w @operators/exoledge`. A test fails when the committed file
 * differs from what this generates, so the YAML never drifts from the types.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdYaml } from '@operators/kit';
import { blocklistSourceCrd } from './blocklist-source.ts';
import { edgeSiteCrd } from './edge-site.ts';

/** Where the generated CRDs live, relative to the package. */
export const CRD_FILES = [
  {
    file: 'crds/blocklistsources.yaml',
    source: 'operators/exoledge/src/api/blocklist-source.ts',
    crds: blocklistSourceCrd,
  },
  {
    file: 'crds/edgesites.yaml',
    source: 'operators/exoledge/src/api/edge-site.ts',
    crds: edgeSiteCrd,
  },
] as const;

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
