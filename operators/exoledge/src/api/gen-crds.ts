/**
 * Writes `crds/blocklistsources.yaml` from the TypeScript definition in this folder:
 * `npm run gen-crds -w @operators/exoledge`. A test fails when the committed file
 * differs from what this generates, so the YAML never drifts from the types.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdYaml } from '@operators/kit';
import { blocklistSourceCrd } from './blocklist-source.ts';

/** Where the generated CRDs live, relative to the package. */
export const CRD_FILES = [
  {
    file: 'crds/blocklistsources.yaml',
    source: 'operators/exoledge/src/api/blocklist-source.ts',
    crds: blocklistSourceCrd,
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
