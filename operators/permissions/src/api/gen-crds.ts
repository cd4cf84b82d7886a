/**
 * Writes `crds/<plural>.permissions.shturval.tech.yaml`, one file per kind, from the
 * TypeScript definitions in this folder: `npm run gen-crds -w @operators/permissions`.
 * A test fails when a committed file differs from what this generates, so the YAML
 * never drifts from the types.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdYaml, type KubeObject } from '@operators/kit';
import { groupRoleCrd } from './group-role.ts';
import { permissionCrd } from './permission.ts';
import { scopeCrd } from './scope.ts';
import { tenantCrd } from './tenant.ts';
import { userRoleCrd } from './user-role.ts';

/** Where the generated CRDs live, relative to the package, and the file each comes from. */
export const CRD_FILES = [
  {
    file: 'crds/permissions.permissions.shturval.tech.yaml',
    source: 'operators/permissions/src/api/permission.ts',
    crds: permissionCrd,
  },
  {
    file: 'crds/scopes.permissions.shturval.tech.yaml',
    source: 'operators/permissions/src/api/scope.ts',
    crds: scopeCrd,
  },
  {
    file: 'crds/userroles.permissions.shturval.tech.yaml',
    source: 'operators/permissions/src/api/user-role.ts',
    crds: userRoleCrd,
  },
  {
    file: 'crds/grouproles.permissions.shturval.tech.yaml',
    source: 'operators/permissions/src/api/group-role.ts',
    crds: groupRoleCrd,
  },
  {
    file: 'crds/tenants.permissions.shturval.tech.yaml',
    source: 'operators/permissions/src/api/tenant.ts',
    crds: tenantCrd,
  },
] as const;

/** Every permissions.shturval.tech CRD, for installing them all (tests, the chart). */
export function permissionsCrds(): KubeObject[] {
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
