/**
 * The few Kubernetes kinds a TerdutServer's controller reads or writes, as plain JSON
 * shapes: only the fields this operator states or reads, not the whole API. What the
 * apiserver defaults (strategy, revisionHistoryLimit, probe timings, ...) is left out on
 * purpose: drift is judged on what we state (kit's `drift`), so stating a default would
 * only be a second place to keep in step with the apiserver.
 */
import type { KubeObject, ObjectMeta } from '@operators/kit';

/** apps/v1 Deployment: the terdut-server pods. */
export const DEPLOYMENT = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;
/** v1 Service: the ClusterIP in front of the pods. */
export const SERVICE = { apiVersion: 'v1', kind: 'Service' } as const;
/** v1 Secret: the database password (BYO or Zalando-generated) and the operator credentials. */
export const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
/** v1 Namespace: read for its labels when `allowedTeams.namespaces.from` is Selector. */
export const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;
/** The Zalando postgres-operator's cluster CR (an optional CRD: it may not be served at all). */
export const POSTGRESQL = { apiVersion: 'acid.zalan.do/v1', kind: 'postgresql' } as const;

/** A key of a Secret in the pod's namespace, both parts resolved (no defaults left). */
export interface SecretKeySelector {
  readonly name: string;
  readonly key: string;
}

/** One environment variable: a literal value or a Secret key, never both. */
export type EnvVar =
  | { readonly name: string; readonly value: string }
  | { readonly name: string; readonly valueFrom: { readonly secretKeyRef: SecretKeySelector } };

export interface ContainerPort {
  readonly name: string;
  readonly containerPort: number;
  readonly protocol: 'TCP';
}

export interface Probe {
  readonly httpGet: { readonly path: string; readonly port: string };
}

export interface SecurityContext {
  readonly runAsNonRoot: boolean;
  readonly readOnlyRootFilesystem: boolean;
  readonly allowPrivilegeEscalation: boolean;
  readonly capabilities: { readonly drop: readonly string[] };
}

export interface PodSecurityContext {
  readonly runAsNonRoot: boolean;
  readonly seccompProfile: { readonly type: 'RuntimeDefault' };
}

export interface Container {
  readonly name: string;
  readonly image: string;
  readonly ports: readonly ContainerPort[];
  readonly env: readonly EnvVar[];
  readonly readinessProbe: Probe;
  readonly livenessProbe: Probe;
  readonly securityContext: SecurityContext;
}

export interface PodTemplateSpec {
  readonly metadata: { readonly labels: Readonly<Record<string, string>> };
  readonly spec: {
    readonly securityContext: PodSecurityContext;
    readonly containers: readonly Container[];
  };
}

export interface DeploymentSpec {
  readonly replicas: number;
  readonly selector: { readonly matchLabels: Readonly<Record<string, string>> };
  readonly template: PodTemplateSpec;
}

export interface Deployment extends KubeObject {
  readonly apiVersion: typeof DEPLOYMENT.apiVersion;
  readonly kind: typeof DEPLOYMENT.kind;
  readonly metadata: ObjectMeta;
  readonly spec: DeploymentSpec;
}

export interface ServicePort {
  readonly name: string;
  readonly port: number;
  readonly targetPort: string;
  readonly protocol: 'TCP';
}

export interface ServiceSpec {
  readonly type: 'ClusterIP';
  readonly selector: Readonly<Record<string, string>>;
  readonly ports: readonly ServicePort[];
}

export interface Service extends KubeObject {
  readonly apiVersion: typeof SERVICE.apiVersion;
  readonly kind: typeof SERVICE.kind;
  readonly metadata: ObjectMeta;
  readonly spec: ServiceSpec;
}
