/**
 * Kubernetes-exact CEL: compile against declared variables, evaluate to a value or an
 * error, convert JSON in and out as the apiserver does. See docs/cel.md.
 */
export { DEFAULT_COST_LIMIT } from './cost.ts';
export { CelEnvironment, type EnvironmentOptions } from './environment.ts';
export { type CelError, CelErrorKind, formatCelError, type SourcePosition } from './errors.ts';
export { fromJson, parseJson, parseYaml } from './json.ts';
export { type CelMacroUse, type CelOutline, type CelRead, outlineExpression } from './outline.ts';
export { CelProgram, type Variables } from './program.ts';
export type { Result } from './result.ts';
export { type CelList, type CelMap, type CelValue, type JsonValue, toJson } from './values.ts';
