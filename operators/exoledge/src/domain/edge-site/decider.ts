/**
 * The site's decider: the HTTP service ext_authz asks for a verdict (`/v1/verdict`),
 * as a ServiceAccount, a Deployment and a Service `<site>-decider` in the site's
 * namespace.
 *
 * The pods are hardened as the seed's operator is: read-only root filesystem with `/tmp`
 * an emptyDir, non-root, no privilege escalation, every capability dropped, seccomp
 * RuntimeDefault; readiness on `/readyz`, liveness on `/healthz`, on the one port.
 *
 * What the decider reads, and how it may:
 * - the shard ConfigMaps, in the shard namespace, through the API: the Role and
 *   RoleBinding of `shard-access.ts` let its ServiceAccount get, list and watch them;
 * - its site's ConfigMap (`<site>-edge`) and the allowlist ConfigMaps, in the site's
 *   namespace, mounted by the kubelet: no grant in the site's namespace is needed. An
 *   allowlist is mounted `optional`, so one not created yet does not keep the pods from
 *   starting. The environment names the site's ConfigMap and the shard namespace;
 * - the captcha's secret key, as an environment variable the kubelet fills from the
 *   Secret `spec.captcha.secretRef`: the operator never reads it.
 */
import {
  DEFAULT_CAPTCHA_SECRET_KEY,
  DEFAULT_DECIDER_REPLICAS,
  type EdgeSiteSpec,
} from '../../api/edge-site.ts';
import { OwnedKind } from './kinds.ts';
import {
  deciderName,
  deciderSelector,
  SIGNING_KEY_SECRET_KEY,
  signingKeySecretName,
  siteConfigMapName,
  siteLabels,
} from './names.ts';
import type { EdgeSiteOptions } from './options.ts';
import { owned, type SiteRef } from './owner.ts';
import { effectiveSecurity } from './security.ts';
import { SITE_CONFIG_KEY } from './site-config.ts';

export const DECIDER_CONTAINER = 'decider';
/** The name of the container port and of the Service port. */
export const DECIDER_PORT_NAME = 'http';
export const READINESS_PATH = '/readyz';
export const LIVENESS_PATH = '/healthz';
/** Where the site's ConfigMap is mounted; the configuration is `config.json` in it. */
export const SITE_CONFIG_DIR = '/etc/exoledge/site';
/** Where allowlist `<name>` is mounted: `<ALLOWLISTS_DIR>/<name>`. */
export const ALLOWLISTS_DIR = '/etc/exoledge/allowlists';

/**
 * Node's options for the decider, set as `NODE_OPTIONS` in its container. V8's young
 * generation (semi-space) grows to 16 MB per half by default and keeps what it grew to;
 * 8 MB halves the RSS that costs while keeping scavenges rare. Smaller is dearer than it
 * looks: with three million prefixes in the old generation every scavenge costs more,
 * and at 2 MB (scavenging four times as often) the decider spent 34.6 µs of CPU a request
 * instead of 29.4 (`npm run bench:exoledge-decider`, which runs the decider with these
 * options; 16 MB: 28.1 µs, and 297 MB at rest after a reload, at the 300 MB limit). At
 * 8 MB: 198 MB after the load, 274 MB at rest after a reload.
 */
export const DECIDER_NODE_OPTIONS = '--max-semi-space-size=8';

/** The decider's environment: its contract with the operator, one variable each. */
export const DeciderEnv = {
  SiteNamespace: 'EXOLEDGE_SITE_NAMESPACE',
  Site: 'EXOLEDGE_SITE',
  /** The name of the site's ConfigMap (for logs and events; its content is mounted). */
  SiteConfigMap: 'EXOLEDGE_SITE_CONFIGMAP',
  /** The path of the mounted configuration. */
  SiteConfig: 'EXOLEDGE_SITE_CONFIG',
  ShardNamespace: 'EXOLEDGE_SHARD_NAMESPACE',
  AllowlistsDir: 'EXOLEDGE_ALLOWLISTS_DIR',
  /** `:<port>`. */
  Listen: 'EXOLEDGE_LISTEN',
  /** Only with a captcha: the provider's secret key, from the Secret. */
  CaptchaSecret: 'EXOLEDGE_CAPTCHA_SECRET',
  /**
   * Not set by the operator: where captcha answers are verified, instead of the
   * provider's own endpoint (`CAPTCHA_VERIFY_URLS`), for a proxy in front of it.
   */
  CaptchaVerifyUrl: 'EXOLEDGE_CAPTCHA_VERIFY_URL',
  /**
   * `redis://[user:password@]host:port[/db]` (or `rediss://`): where clearances, counters
   * and the signing key live. Absent: the decider runs without state (nobody can be
   * cleared, nothing is counted) and says so in `/readyz`.
   */
  ValkeyUrl: 'EXOLEDGE_VALKEY_URL',
  /**
   * Envoy's `xff_num_trusted_hops` (Istio's `numTrustedProxies`) for the site's gateway:
   * the client address is the (N+1)-th `X-Forwarded-For` entry from the right, 0 being
   * the gateway's own peer (`client-address.ts`).
   */
  TrustedHops: 'EXOLEDGE_TRUSTED_HOPS',
  /** A header a CDN in front overwrites with the client address; read first when named. */
  ClientAddressHeader: 'EXOLEDGE_CLIENT_ADDRESS_HEADER',
  /**
   * Comma-separated signing keys of clearances and nonces, the first signing, from the
   * optional Secret `<decider>-signing-key` (key `keys`). Absent: the key is made in Valkey.
   */
  SigningKeys: 'EXOLEDGE_SIGNING_KEYS',
} as const;

export function deciderServiceAccount(site: SiteRef) {
  return owned(site, OwnedKind.ServiceAccount, deciderName(site.name), {});
}

export function deciderDeployment(site: SiteRef, spec: EdgeSiteSpec, options: EdgeSiteOptions) {
  const selector = deciderSelector(site.name);
  const allowlists = effectiveSecurity(spec).allowlists;
  const env = [
    { name: DeciderEnv.SiteNamespace, value: site.namespace },
    { name: DeciderEnv.Site, value: site.name },
    { name: DeciderEnv.SiteConfigMap, value: siteConfigMapName(site.name) },
    { name: DeciderEnv.SiteConfig, value: `${SITE_CONFIG_DIR}/${SITE_CONFIG_KEY}` },
    { name: DeciderEnv.ShardNamespace, value: options.shardNamespace },
    { name: DeciderEnv.AllowlistsDir, value: ALLOWLISTS_DIR },
    { name: DeciderEnv.Listen, value: `:${options.deciderPort}` },
    ...(options.valkeyUrl === undefined ? [] : [{ name: DeciderEnv.ValkeyUrl, value: options.valkeyUrl }]),
    { name: DeciderEnv.TrustedHops, value: String(options.trustedHops) },
    ...(options.clientAddressHeader === undefined
      ? []
      : [{ name: DeciderEnv.ClientAddressHeader, value: options.clientAddressHeader }]),
    {
      name: DeciderEnv.SigningKeys,
      // Optional: a site without the Secret runs on the key Valkey holds.
      valueFrom: {
        secretKeyRef: { name: signingKeySecretName(site.name), key: SIGNING_KEY_SECRET_KEY, optional: true },
      },
    },
    { name: 'NODE_OPTIONS', value: DECIDER_NODE_OPTIONS },
    ...(spec.captcha
      ? [
          {
            name: DeciderEnv.CaptchaSecret,
            valueFrom: {
              secretKeyRef: {
                name: spec.captcha.secretRef.name,
                key: spec.captcha.secretRef.key ?? DEFAULT_CAPTCHA_SECRET_KEY,
              },
            },
          },
        ]
      : []),
  ];
  const container = {
    name: DECIDER_CONTAINER,
    image: options.deciderImage,
    ports: [{ name: DECIDER_PORT_NAME, containerPort: options.deciderPort, protocol: 'TCP' }],
    env,
    readinessProbe: { httpGet: { path: READINESS_PATH, port: DECIDER_PORT_NAME } },
    livenessProbe: { httpGet: { path: LIVENESS_PATH, port: DECIDER_PORT_NAME } },
    securityContext: {
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    },
    volumeMounts: [
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'site-config', mountPath: SITE_CONFIG_DIR, readOnly: true },
      ...allowlists.map((name, i) => ({
        name: `allowlist-${i}`,
        mountPath: `${ALLOWLISTS_DIR}/${name}`,
        readOnly: true,
      })),
    ],
  };
  return owned(site, OwnedKind.Deployment, deciderName(site.name), {
    spec: {
      replicas: spec.decider?.replicas ?? DEFAULT_DECIDER_REPLICAS,
      selector: { matchLabels: selector },
      template: {
        // No hash of the configuration on the template: the decider reloads its mounted
        // files when the kubelet updates them, so a posture change does not roll the pods
        // (the seed's limit). Only a changed set of allowlists, a volume, rolls them.
        metadata: { labels: siteLabels(site.name, selector) },
        spec: {
          serviceAccountName: deciderName(site.name),
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [container],
          volumes: [
            { name: 'tmp', emptyDir: {} },
            { name: 'site-config', configMap: { name: siteConfigMapName(site.name) } },
            ...allowlists.map((name, i) => ({ name: `allowlist-${i}`, configMap: { name, optional: true } })),
          ],
        },
      },
    },
  });
}

/** The ClusterIP Service ext_authz reaches the decider through (`outbound|<port>||<svc>.<ns>.svc.cluster.local`). */
export function deciderService(site: SiteRef, options: EdgeSiteOptions) {
  return owned(site, OwnedKind.Service, deciderName(site.name), {
    spec: {
      type: 'ClusterIP',
      selector: deciderSelector(site.name),
      ports: [
        {
          name: DECIDER_PORT_NAME,
          port: options.deciderPort,
          targetPort: DECIDER_PORT_NAME,
          protocol: 'TCP',
          appProtocol: 'http',
        },
      ],
    },
  });
}

/** The decider Service's host name, as Istio names its cluster. */
export function deciderHost(site: SiteRef): string {
  return `${deciderName(site.name)}.${site.namespace}.svc.cluster.local`;
}
