export * from './headers.ts';
export * from './lifecycle.ts';
export * from './mapping.ts';
export * from './policy.ts';
export * from './rbac.ts';
export * from './rules.ts';
