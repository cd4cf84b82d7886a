/**
 * Writes `crds/*.yaml`, one file per kind, from the TypeScript definitions in this
 * folder: `npm run gen-crds -w @operators/terdut`. A test fails when a committed file
 * differs from what this generates, so the YAML never drifts from the types.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdYaml, type KubeObject } from '@operators/kit';
import { terdutAlertSourceCrd } from './terdut-alert-source.ts';
import { terdutDeadmanSwitchCrd } from './terdut-deadman-switch.ts';
import { terdutEscalationRuleCrd } from './terdut-escalation-rule.ts';
import { terdutServerCrd } from './terdut-server.ts';
import { terdutTeamCrd } from './terdut-team.ts';

/** Where the generated CRDs live, relative to the package, and the file each comes from. */
export const CRD_FILES = [
  {
    file: 'crds/terdutservers.yaml',
    source: 'operators/terdut/src/api/terdut-server.ts',
    crds: terdutServerCrd,
  },
  {
    file: 'crds/terdutteams.yaml',
    source: 'operators/terdut/src/api/terdut-team.ts',
    crds: terdutTeamCrd,
  },
  {
    file: 'crds/terdutescalationrules.yaml',
    source: 'operators/terdut/src/api/terdut-escalation-rule.ts',
    crds: terdutEscalationRuleCrd,
  },
  {
    file: 'crds/terdutdeadmanswitches.yaml',
    source: 'operators/terdut/src/api/terdut-deadman-switch.ts',
    crds: terdutDeadmanSwitchCrd,
  },
  {
    file: 'crds/terdutalertsources.yaml',
    source: 'operators/terdut/src/api/terdut-alert-source.ts',
    crds: terdutAlertSourceCrd,
  },
] as const;

/** Every terdut.ryuvia.com CRD, for installing them all (tests, the chart). */
export function terdutCrds(): KubeObject[] {
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
