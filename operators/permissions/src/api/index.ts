/** The permissions.shturval.tech API: the five kinds, their shared pieces and their CRDs. */
export * from './common.ts';
export { CRD_FILES, permissionsCrds } from './gen-crds.ts';
export * from './group-role.ts';
export * from './permission.ts';
export * from './role-status.ts';
export * from './scope.ts';
export * from './tenant.ts';
export * from './user-role.ts';
