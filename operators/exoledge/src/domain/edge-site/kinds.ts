/**
 * The kinds an EdgeSite owns, with the API version each is written in, and the two
 * orders the controller walks them in. The versions are those the real CRDs serve in
 * the versions the tests install (`packages/controlplane/src/versions.ts`): cert-manager
 * v1, Gateway API v1, Istio's storage versions (DestinationRule and AuthorizationPolicy
 * v1, EnvoyFilter v1alpha3, WasmPlugin v1alpha1 — the last two have no other).
 */

export const OwnedKind = {
  ServiceAccount: 'ServiceAccount',
  ConfigMap: 'ConfigMap',
  Deployment: 'Deployment',
  Service: 'Service',
  Certificate: 'Certificate',
  Gateway: 'Gateway',
  EnvoyFilter: 'EnvoyFilter',
  WasmPlugin: 'WasmPlugin',
  AuthorizationPolicy: 'AuthorizationPolicy',
  DestinationRule: 'DestinationRule',
  HTTPRoute: 'HTTPRoute',
} as const;
export type OwnedKind = (typeof OwnedKind)[keyof typeof OwnedKind];

/** The kinds written in the shard namespace, where the site cannot own anything. */
export const ShardKind = { Role: 'Role', RoleBinding: 'RoleBinding' } as const;
export type ShardKind = (typeof ShardKind)[keyof typeof ShardKind];

export const API_VERSION: Readonly<Record<OwnedKind | ShardKind, string>> = {
  ServiceAccount: 'v1',
  ConfigMap: 'v1',
  Deployment: 'apps/v1',
  Service: 'v1',
  Certificate: 'cert-manager.io/v1',
  Gateway: 'gateway.networking.k8s.io/v1',
  EnvoyFilter: 'networking.istio.io/v1alpha3',
  WasmPlugin: 'extensions.istio.io/v1alpha1',
  AuthorizationPolicy: 'security.istio.io/v1',
  DestinationRule: 'networking.istio.io/v1',
  HTTPRoute: 'gateway.networking.k8s.io/v1',
  Role: 'rbac.authorization.k8s.io/v1',
  RoleBinding: 'rbac.authorization.k8s.io/v1',
};

/**
 * The CRD that serves each kind not built into Kubernetes: what the status names when the
 * cluster does not serve it (cert-manager, Gateway API or Istio not installed).
 */
export const CRD_OF: Readonly<Partial<Record<OwnedKind | ShardKind, string>>> = {
  Certificate: 'certificates.cert-manager.io',
  Gateway: 'gateways.gateway.networking.k8s.io',
  HTTPRoute: 'httproutes.gateway.networking.k8s.io',
  EnvoyFilter: 'envoyfilters.networking.istio.io',
  WasmPlugin: 'wasmplugins.extensions.istio.io',
  AuthorizationPolicy: 'authorizationpolicies.security.istio.io',
  DestinationRule: 'destinationrules.networking.istio.io',
};

/** Gateway API's group, in parentRefs and in Istio's targetRefs to a Gateway. */
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';
/** RBAC's group, in a RoleBinding's roleRef. */
export const RBAC_GROUP = 'rbac.authorization.k8s.io';

/**
 * The order a site's objects are applied in: what is referenced before what refers to
 * it, and the route last. The decider (account, configuration, pods, Service) comes
 * first so that the ext_authz filter has somewhere to send requests; the certificate
 * before the Gateway whose listeners serve its Secret; every filter (ext_authz, the
 * plugins, the deny policy) and the DestinationRule before the HTTPRoute, because the
 * route is what lets traffic through to the origins: applied last, no request ever
 * reaches an origin through a gateway whose filters are not in place yet.
 */
export const APPLY_ORDER: readonly OwnedKind[] = [
  OwnedKind.ServiceAccount,
  OwnedKind.ConfigMap,
  OwnedKind.Deployment,
  OwnedKind.Service,
  OwnedKind.Certificate,
  OwnedKind.Gateway,
  OwnedKind.EnvoyFilter,
  OwnedKind.WasmPlugin,
  OwnedKind.AuthorizationPolicy,
  OwnedKind.DestinationRule,
  OwnedKind.HTTPRoute,
];

/**
 * The order the finalizer deletes a site's objects in: the apply order reversed, so the
 * route goes first. The seed lists "politiques, plugins, route", but a route whose
 * filters are gone is a route open to everyone: deleted first, no request reaches an
 * origin through this gateway any more, and the filters and the decider then go with
 * nothing left for them to guard.
 */
export const DELETE_ORDER: readonly OwnedKind[] = [...APPLY_ORDER].reverse();

/** The shard namespace's objects: the Role before the binding that grants it, and the reverse to delete. */
export const SHARD_APPLY_ORDER: readonly ShardKind[] = [ShardKind.Role, ShardKind.RoleBinding];
export const SHARD_DELETE_ORDER: readonly ShardKind[] = [ShardKind.RoleBinding, ShardKind.Role];
