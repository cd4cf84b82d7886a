/**
 * kube-controller-manager for a test plane: which controllers run, with which flags,
 * and when it counts as ready. The plane (controlplane.ts) starts and supervises it;
 * this module holds the decisions.
 *
 * Guarantees:
 * - Only the controllers asked for run (`--controllers` lists them and nothing else),
 *   so a plane never grows behaviour a test did not ask for. The default set is the
 *   part of a cluster's control loop that makes sense without nodes.
 * - Each controller acts under its own service account (`--use-service-account-credentials`),
 *   as in a real cluster: a missing RBAC grant fails here as it would there.
 * - Ready means: `/healthz` answers ok and lists every requested controller as started,
 *   and (when the serviceaccount controller runs) it has created the `default`
 *   ServiceAccount of the `default` namespace, which proves the informers started and a
 *   controller wrote through the apiserver.
 */

/**
 * kube-controller-manager's names for the controllers a plane without nodes can run
 * (`kube-controller-manager --help`, flag `--controllers`, Kubernetes 1.36).
 */
export const KcmController = {
  /** Deletes dependents whose owners are gone (ownerReferences), and orphans on request. */
  GarbageCollector: 'garbage-collector-controller',
  /** Empties a Terminating namespace and removes its `kubernetes` finalizer, so it goes away. */
  Namespace: 'namespace-controller',
  /** Fills the `rules` of ClusterRoles that carry an `aggregationRule`. */
  ClusterRoleAggregation: 'clusterrole-aggregation-controller',
  /** Creates the `default` ServiceAccount in every namespace. */
  ServiceAccount: 'serviceaccount-controller',
  /** Fills Secrets of type `kubernetes.io/service-account-token`; needs the signing key. */
  ServiceAccountToken: 'serviceaccount-token-controller',
  /** Keeps an EndpointSlice per Service, from the Pods its selector matches. */
  EndpointSlice: 'endpointslice-controller',
} as const;
export type KcmController = (typeof KcmController)[keyof typeof KcmController];

/** What `controllerManager: true` runs. */
export const DEFAULT_CONTROLLERS: readonly string[] = [
  KcmController.GarbageCollector,
  KcmController.Namespace,
  KcmController.ClusterRoleAggregation,
  KcmController.ServiceAccount,
  KcmController.ServiceAccountToken,
  KcmController.EndpointSlice,
];

export interface ControllerManagerOptions {
  /**
   * Controllers to run, by kube-controller-manager's names (see {@link KcmController});
   * {@link DEFAULT_CONTROLLERS} when omitted. Anything else stays off.
   */
  readonly controllers?: readonly string[];
}

/** The files and port a kube-controller-manager of one plane is started with. */
export interface ControllerManagerFiles {
  /** Kubeconfig with the client certificate CN=system:kube-controller-manager. */
  readonly kubeconfig: string;
  readonly ca: string;
  readonly servingCert: string;
  readonly servingKey: string;
  readonly saKey: string;
  readonly port: number;
}

export function controllersOf(opt: boolean | ControllerManagerOptions | undefined): readonly string[] {
  if (!opt) return [];
  if (opt === true) return DEFAULT_CONTROLLERS;
  const list = opt.controllers ?? DEFAULT_CONTROLLERS;
  if (list.length === 0) {
    throw new Error('controllerManager.controllers is empty; ask for at least one controller or pass false');
  }
  return list;
}

export function controllerManagerArgs(controllers: readonly string[], f: ControllerManagerFiles): string[] {
  const args = [
    `--kubeconfig=${f.kubeconfig}`,
    // Delegated authentication and authorisation of its own HTTPS endpoint: without
    // them it starts with warnings and cannot check the clients of /metrics.
    `--authentication-kubeconfig=${f.kubeconfig}`,
    `--authorization-kubeconfig=${f.kubeconfig}`,
    `--client-ca-file=${f.ca}`,
    // The client CA is given; looking the rest up in kube-system's
    // extension-apiserver-authentication finds no request-header CA (the apiserver
    // has no front proxy) and logs an error every few seconds.
    '--authentication-skip-lookup=true',
    '--bind-address=127.0.0.1',
    `--secure-port=${f.port}`,
    // The apiserver's serving certificate names 127.0.0.1: the readiness probe can
    // verify it against the plane's CA instead of skipping verification.
    `--tls-cert-file=${f.servingCert}`,
    `--tls-private-key-file=${f.servingKey}`,
    '--leader-elect=false',
    '--use-service-account-credentials=true',
    `--root-ca-file=${f.ca}`,
    `--controllers=${controllers.join(',')}`,
    '--profiling=false',
  ];
  // The token controller signs with the key the apiserver verifies with; without the
  // flag it disables itself, so it is passed only when that controller is asked for.
  if (controllers.includes(KcmController.ServiceAccountToken)) {
    args.push(`--service-account-private-key-file=${f.saKey}`);
  }
  return args;
}

/**
 * Whether `/healthz?verbose` output says every requested controller was started. The
 * token controller is started apart from the others and registers no check of its own.
 */
export function controllersStarted(healthzVerbose: string, controllers: readonly string[]): boolean {
  const ok = new Set(
    healthzVerbose
      .split('\n')
      .map((l) => /^\[\+\]([\w-]+) ok$/.exec(l.trim())?.[1])
      .filter((n): n is string => n !== undefined),
  );
  return controllers.filter((c) => c !== KcmController.ServiceAccountToken).every((c) => ok.has(c));
}
