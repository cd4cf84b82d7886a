/**
 * The EdgeSite's decisions, pure: what its security switches mean (`effectiveSecurity`),
 * which functions its own objects carry (`featuresFor`), and every object it should own
 * (`desiredObjects`), named, ordered for apply and delete, with the decider's grant in
 * the shard namespace apart. The controller reads, calls these, and applies.
 */
export {
  ALLOWLISTS_DIR,
  DECIDER_CONTAINER,
  DECIDER_PORT_NAME,
  DeciderEnv,
  deciderHost,
  LIVENESS_PATH,
  READINESS_PATH,
  SITE_CONFIG_DIR,
} from './decider.ts';
export {
  type DesiredObject,
  type DesiredSet,
  desiredObjects,
  type ObjectRef,
  type ShardSet,
} from './desired.ts';
export { carries, type FeaturePlan, featuresFor, SiteMode, siteMode } from './features.ts';
export {
  CORAZA_DIRECTIVES,
  failureModeAllow,
  VERDICT_HEADER,
  VERDICT_PATH,
  VERDICT_REQUEST_HEADERS,
  VERDICT_TIMEOUT,
  wasmUrl,
} from './filters.ts';
export { HTTPS_PORT, tlsSecretName } from './gateway.ts';
export { upstreamServices } from './grpc.ts';
export {
  API_VERSION,
  APPLY_ORDER,
  CRD_OF,
  DELETE_ORDER,
  GATEWAY_API_GROUP,
  OwnedKind,
  SHARD_APPLY_ORDER,
  SHARD_DELETE_ORDER,
  ShardKind,
} from './kinds.ts';
export {
  certificateName,
  DECIDER_APP,
  deciderName,
  defaultTlsSecretName,
  extAuthzFilterName,
  GATEWAY_NAME_LABEL,
  gatewayName,
  grpcRuleName,
  LABEL_SITE,
  LABEL_SITE_NAMESPACE,
  LABEL_UPSTREAM,
  routeName,
  SIGNING_KEY_SECRET_KEY,
  sensitiveFilesPolicyName,
  shardAccessName,
  shardSelector,
  signingKeySecretName,
  siteConfigMapName,
  wafPluginName,
} from './names.ts';
export { DEFAULT_DECIDER_PORT, type EdgeSiteOptions } from './options.ts';
export { OriginReason } from './origin-reasons.ts';
export {
  type EndpointSlice,
  endpointSliceSites,
  originsOf,
  type Service,
  serviceSites,
} from './origins.ts';
export { FeatureReason } from './reasons.ts';
export { type ResolvedRoute, ROOT_PREFIX, resolvedRoutes } from './route.ts';
export {
  type BlocklistSelection,
  DEFAULT_ALLOWLISTS,
  DEFAULT_BLOCKLISTS,
  DEFAULT_CHALLENGE,
  DEFAULT_SENSITIVE_FILES,
  DEFAULT_WAF,
  type EffectiveSecurity,
  effectiveSecurity,
  SECURITY_SWITCHES,
  type SecuritySwitch,
} from './security.ts';
export {
  SENSITIVE_FILE_GROUPS,
  SENSITIVE_FILE_SUFFIXES,
  type SensitiveFileGroup,
} from './sensitive-files.ts';
export {
  type FilterSettings,
  SITE_CONFIG_KEY,
  type SiteConfig,
  siteConfig,
} from './site-config.ts';
export { SiteReason } from './site-reasons.ts';
export {
  featureOf,
  featureStatuses,
  nextStatus,
  type ObjectOutcome,
  outcomeKey,
  type ReconcileVerdict,
  readyCondition,
  type StatusInput,
} from './status.ts';
