/**
 * `@operators/weebo-link`: what another package may build on. The process (`startWeeboLink`
 * and its options), the pure domain (rules, mapping, the lifecycle decision, the RBAC the
 * rules need, offline policy evaluation), and the ConfigMap the rules are read from. The
 * controllers, the CLI and the testkit stay internal: they are reached through these.
 */
export { startWeeboLink, type WeeboLink, type WeeboLinkOptions } from './app.ts';
export { RULES_CONFIGMAP, RULES_KEY } from './controllers/rules.ts';
export * from './domain/index.ts';
