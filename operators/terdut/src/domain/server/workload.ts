/**
 * The terdut-server workload a TerdutServer asks for (DESIGN §4.1, §7, §8): its
 * Deployment and its Service, as the controller applies them. Pure and deterministic:
 * the same TerdutServer and database resolution give the same objects, field for field,
 * so that a resync finds no drift and writes nothing.
 *
 * The container's environment, from the spec (a variable is set only when its value is
 * present: an absent field, an empty string, an empty list or a SecretKeyRef without a
 * `name` leave it unset, so terdut-server's own default applies). Sorted by name.
 *
 * | Variable                      | From                                                          |
 * | ----------------------------- | ------------------------------------------------------------- |
 * | `PGPASSWORD`                  | Secret key `db.password` (secretKeyRef), when the DB has one   |
 * | `TERDUT_DATABASE_DSN`         | `db.dsn` (resolveDatabase; never a password in it)            |
 * | `TERDUT_DEADMAN_MATCHERS`     | `deadman.matchers`                                            |
 * | `TERDUT_DEADMAN_SEVERITY`     | `deadman.severity`                                            |
 * | `TERDUT_DEADMAN_TIMEOUT`      | `deadman.timeout`                                             |
 * | `TERDUT_LISTEN_ADDR`          | `:<networking.servicePort>` (default `:8080`)                 |
 * | `TERDUT_NTFY_FALLBACK_TOPIC`  | `notify.fallbackTopic`                                        |
 * | `TERDUT_NTFY_REPEAT_EVERY`    | `notify.repeatEvery`                                          |
 * | `TERDUT_NTFY_TOKEN`           | Secret `notify.tokenSecretRef` (key default `token`)          |
 * | `TERDUT_NTFY_URL`             | `notify.ntfyURL`                                              |
 * | `TERDUT_OIDC_ADMIN_GROUP`     | `oidc.adminGroup`                                   (*)       |
 * | `TERDUT_OIDC_ALLOWED_GROUPS`  | `oidc.allowedGroups`, comma-joined (empty entries dropped) (*) |
 * | `TERDUT_OIDC_CLIENT_ID`       | `oidc.clientID`                                     (*)       |
 * | `TERDUT_OIDC_CLIENT_SECRET`   | Secret `oidc.clientSecretRef` (key default `client-secret`) (*) |
 * | `TERDUT_OIDC_ENABLED`         | `"true"`                                            (*)       |
 * | `TERDUT_OIDC_ISSUER`          | `oidc.issuer`                                       (*)       |
 * | `TERDUT_OIDC_NAME`            | `oidc.name`                                         (*)       |
 * | `TERDUT_OIDC_SCOPES`          | `oidc.scopes`                                       (*)       |
 * | `TERDUT_OIDC_SESSION_MAX_AGE` | `oidc.sessionMaxAge`                                (*)       |
 * | `TERDUT_PASSWORD_LOGIN`       | `passwordLogin`, `"true"` or `"false"`                        |
 * | `TERDUT_PUBLIC_URL`           | `https://<networking.hostname>`                               |
 * | `TERDUT_SWEEPER_ARCHIVE_AFTER`| `sweeper.archiveAfter`                                        |
 * | `TERDUT_SWEEPER_STALE_AFTER`  | `sweeper.staleAfter`                                          |
 *
 * (*) only when `oidc.enabled` is true; with OIDC off none of the `TERDUT_OIDC_*` is set.
 *
 * Secrets are referred to (`valueFrom.secretKeyRef`), never copied in, and nothing of a
 * Secret (its resourceVersion, a hash of its data) is put into the pod template: a
 * rotated Zalando password must not roll the pods (§8, §13). The kubelet reads a
 * secretKeyRef when a container starts, so pods started after a rotation get the new
 * password; restarting running pods on rotation is deferred (§13), not a side effect of
 * this function.
 */
import type { OwnerReference } from '@operators/kit';
import type { SecretKeyRef } from '../../api/common.ts';
import { TERDUT_SERVER, type TerdutServer, type TerdutServerSpec } from '../../api/terdut-server.ts';
import type { DatabaseResolution } from './database.ts';
import {
  type Container,
  DEPLOYMENT,
  type Deployment,
  type EnvVar,
  SERVICE,
  type SecretKeySelector,
  type Service,
} from './k8s-types.ts';

/** A database resolution the workload can be built from. */
export type ResolvedDatabase = Extract<DatabaseResolution, { kind: 'Resolved' }>;

export const DEFAULT_IMAGE_REPOSITORY = 'git.ryuvia.com/niklas/terdut-server';
export const DEFAULT_IMAGE_TAG = 'v0.9.3';
export const DEFAULT_REPLICAS = 1;
export const DEFAULT_SERVICE_PORT = 8080;
/** The name of the container port and of the Service port. */
export const HTTP_PORT_NAME = 'http';
/** terdut-server's health endpoint, for both probes. */
export const HEALTH_PATH = '/healthz';
export const CONTAINER_NAME = 'terdut-server';
/** Key of `notify.tokenSecretRef` when it names none. */
export const DEFAULT_NTFY_TOKEN_KEY = 'token';
/** Key of `oidc.clientSecretRef` when it names none. */
export const DEFAULT_OIDC_CLIENT_SECRET_KEY = 'client-secret';

export const LABEL_NAME = 'app.kubernetes.io/name';
export const LABEL_INSTANCE = 'app.kubernetes.io/instance';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const APP_NAME = 'terdut-server';
export const MANAGED_BY = 'terdut-operator';

/** The Service in front of a TerdutServer's pods (also `status.serviceName`). */
export function serviceName(server: TerdutServer): string {
  return identity(server).name;
}

/** Where terdut-server's API is reached in-cluster: `http://<name>.<namespace>.svc:<port>`. */
export function serviceUrl(server: TerdutServer): string {
  const { name, namespace } = identity(server);
  return `http://${name}.${namespace}.svc:${servicePort(server.spec)}`;
}

/** The pod selector of both the Deployment and the Service: name and instance (immutable in a Deployment). */
export function selectorLabels(server: TerdutServer): Record<string, string> {
  return { [LABEL_NAME]: APP_NAME, [LABEL_INSTANCE]: identity(server).name };
}

/** The labels of every object made for `server`: the selector plus managed-by. */
export function workloadLabels(server: TerdutServer): Record<string, string> {
  return { ...selectorLabels(server), [LABEL_MANAGED_BY]: MANAGED_BY };
}

/** The image, `<repository>:<tag>` (or `<repository>@<digest>` for a `sha256:` tag), with defaults for what is unset. */
export function imageOf(spec: TerdutServerSpec): string {
  const repository = spec.image?.repository || DEFAULT_IMAGE_REPOSITORY;
  const tag = spec.image?.tag || DEFAULT_IMAGE_TAG;
  return tag.startsWith('sha256:') ? `${repository}@${tag}` : `${repository}:${tag}`;
}

/** The port terdut-server listens on and the Service exposes. */
export function servicePort(spec: TerdutServerSpec): number {
  return spec.networking?.servicePort ?? DEFAULT_SERVICE_PORT;
}

/**
 * The Deployment of `server`, with `db` wired in.
 *
 * @throws Error if `server` lacks name, namespace or uid: the owner must be read from the apiserver.
 */
export function desiredDeployment(server: TerdutServer, db: ResolvedDatabase): Deployment {
  const { name, namespace } = identity(server);
  const port = servicePort(server.spec);
  const container: Container = {
    name: CONTAINER_NAME,
    image: imageOf(server.spec),
    ports: [{ name: HTTP_PORT_NAME, containerPort: port, protocol: 'TCP' }],
    env: desiredEnv(server.spec, db),
    readinessProbe: { httpGet: { path: HEALTH_PATH, port: HTTP_PORT_NAME } },
    livenessProbe: { httpGet: { path: HEALTH_PATH, port: HTTP_PORT_NAME } },
    securityContext: {
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    },
  };
  return {
    ...DEPLOYMENT,
    metadata: { name, namespace, labels: workloadLabels(server), ownerReferences: [ownerOf(server)] },
    spec: {
      replicas: server.spec.replicas ?? DEFAULT_REPLICAS,
      selector: { matchLabels: selectorLabels(server) },
      template: {
        metadata: { labels: workloadLabels(server) },
        spec: {
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [container],
        },
      },
    },
  };
}

/**
 * The Service of `server`: ClusterIP, port `http` to the pods' `http`.
 *
 * @throws Error if `server` lacks name, namespace or uid.
 */
export function desiredService(server: TerdutServer): Service {
  const { name, namespace } = identity(server);
  return {
    ...SERVICE,
    metadata: { name, namespace, labels: workloadLabels(server), ownerReferences: [ownerOf(server)] },
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(server),
      ports: [
        { name: HTTP_PORT_NAME, port: servicePort(server.spec), targetPort: HTTP_PORT_NAME, protocol: 'TCP' },
      ],
    },
  };
}

/** The container's environment (see the table above), sorted by name. */
export function desiredEnv(spec: TerdutServerSpec, db: ResolvedDatabase): EnvVar[] {
  const oidc = spec.oidc?.enabled === true ? spec.oidc : undefined;
  const hostname = spec.networking?.hostname;
  const candidates: [string, string | SecretKeySelector | undefined][] = [
    ['TERDUT_LISTEN_ADDR', `:${servicePort(spec)}`],
    ['TERDUT_DATABASE_DSN', db.dsn],
    ['PGPASSWORD', db.password && { name: db.password.secretName, key: db.password.key }],
    ['TERDUT_PUBLIC_URL', hostname ? `https://${hostname}` : undefined],
    ['TERDUT_SWEEPER_STALE_AFTER', spec.sweeper?.staleAfter],
    ['TERDUT_SWEEPER_ARCHIVE_AFTER', spec.sweeper?.archiveAfter],
    ['TERDUT_DEADMAN_MATCHERS', spec.deadman?.matchers],
    ['TERDUT_DEADMAN_TIMEOUT', spec.deadman?.timeout],
    ['TERDUT_DEADMAN_SEVERITY', spec.deadman?.severity],
    ['TERDUT_NTFY_URL', spec.notify?.ntfyURL],
    ['TERDUT_NTFY_FALLBACK_TOPIC', spec.notify?.fallbackTopic],
    ['TERDUT_NTFY_REPEAT_EVERY', spec.notify?.repeatEvery],
    ['TERDUT_NTFY_TOKEN', secretKey(spec.notify?.tokenSecretRef, DEFAULT_NTFY_TOKEN_KEY)],
    ['TERDUT_OIDC_ENABLED', oidc && 'true'],
    ['TERDUT_OIDC_ISSUER', oidc?.issuer],
    ['TERDUT_OIDC_CLIENT_ID', oidc?.clientID],
    ['TERDUT_OIDC_CLIENT_SECRET', oidc && secretKey(oidc.clientSecretRef, DEFAULT_OIDC_CLIENT_SECRET_KEY)],
    ['TERDUT_OIDC_NAME', oidc?.name],
    ['TERDUT_OIDC_SCOPES', oidc?.scopes],
    ['TERDUT_OIDC_ALLOWED_GROUPS', oidc?.allowedGroups?.filter((g) => g !== '').join(',')],
    ['TERDUT_OIDC_ADMIN_GROUP', oidc?.adminGroup],
    ['TERDUT_OIDC_SESSION_MAX_AGE', oidc?.sessionMaxAge],
    ['TERDUT_PASSWORD_LOGIN', spec.passwordLogin === undefined ? undefined : String(spec.passwordLogin)],
  ];
  const env: EnvVar[] = [];
  for (const [name, from] of candidates) {
    if (from === undefined || from === '') continue;
    env.push(typeof from === 'string' ? { name, value: from } : { name, valueFrom: { secretKeyRef: from } });
  }
  return env.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A SecretKeyRef with a name, its key defaulted; undefined when it names no Secret. */
function secretKey(ref: SecretKeyRef | undefined, defaultKey: string): SecretKeySelector | undefined {
  return ref?.name ? { name: ref.name, key: ref.key || defaultKey } : undefined;
}

/** The controller reference to the TerdutServer, put on everything made for it (§7). */
function ownerOf(server: TerdutServer): OwnerReference {
  const { name, uid } = identity(server);
  return { ...TERDUT_SERVER, name, uid, controller: true, blockOwnerDeletion: true };
}

function identity(server: TerdutServer): { name: string; namespace: string; uid: string } {
  const { name, namespace, uid } = server.metadata;
  if (!name || !namespace || !uid) {
    throw new Error(
      `TerdutServer ${namespace ?? '(no namespace)'}/${name ?? '(unnamed)'} lacks name, namespace or uid: ` +
        'build its workload from the object as read from the apiserver',
    );
  }
  return { name, namespace, uid };
}
