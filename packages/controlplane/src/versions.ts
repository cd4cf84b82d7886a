/**
 * The versions of every binary and third-party module the control plane uses.
 *
 * One place, so that a bump is one diff and the cache key (a folder per version)
 * follows it. The staging modules of Kubernetes are versioned v0.X.Y for v1.X.Y:
 * their patch number must match the kubernetes tag or the build mixes releases.
 */
export const KUBERNETES_VERSION = 'v1.36.3';
export const ETCD_VERSION = 'v3.6.16';
export const HELM_VERSION = 'v3.22.0';
/**
 * promtool, to check the charts' PrometheusRules (`promtool check rules`, `test rules`).
 * Prometheus v3.16.0: its Go module tags v3.X.Y as v0.3XX.Y (the module has no /v3 path).
 */
export const PROMTOOL_VERSION = 'v0.316.0';

/**
 * The CNCF reference OCI registry (`github.com/distribution/distribution/v3`, package
 * `cmd/registry`), which tests push images to. v3.1.2 is the newest release the module
 * proxy serves (v3.0.0, v3.1.1, v3.1.2); its go.mod asks for Go 1.26.0 and has no replace
 * directives, so `go install …/cmd/registry@v3.1.2` builds it with the machine's Go 1.26.
 */
export const REGISTRY_VERSION = 'v3.1.2';

/**
 * containerd (`github.com/containerd/containerd/v2`: cmd/containerd, cmd/ctr,
 * cmd/containerd-shim-runc-v2), the node's container runtime with its CRI plugin. v2.4.2's
 * go.mod has no replace directives and asks for Go 1.26.6, so `go install` builds it with
 * the machine's Go 1.26 (75 s warm, measured for issue 39).
 */
export const CONTAINERD_VERSION = 'v2.4.2';
/**
 * The CNI reference plugins (`github.com/containernetworking/plugins`): bridge, host-local,
 * loopback and portmap wire the node's pod network. v1.10.0 asks for Go 1.26.8.
 */
export const CNI_PLUGINS_VERSION = 'v1.10.0';
/**
 * CoreDNS (`github.com/coredns/coredns`, whose module root is the command), the node's
 * cluster DNS. v1.15.0's go.mod has no replace directives and asks for Go 1.26.0.
 */
export const COREDNS_VERSION = 'v1.15.0';
/**
 * The pause binary of the node's sandbox image, compiled from `build/pause/linux/pause.c` of
 * k8s.io/kubernetes {@link KUBERNETES_VERSION}: this is the `TAG` its `build/pause/Makefile`
 * names. The build refuses a Makefile that names another, so a Kubernetes bump that moves
 * pause forward also bumps this (and its cache folder).
 */
export const PAUSE_VERSION = 'v3.10.2';

/** The Prometheus release of a Go module tag: v0.316.0 ↔ 3.16.0. */
export function prometheusRelease(moduleVersion: string): string {
  const m = /^v0\.(\d)(\d\d)\.(\d+)$/.exec(moduleVersion);
  if (!m) throw new Error(`not a Prometheus Go module tag: ${moduleVersion}`);
  return `${m[1]}.${Number(m[2])}.${m[3]}`;
}

/** The staging modules' version matching {@link KUBERNETES_VERSION} (v1.36.3 ↔ v0.36.3). */
export function stagingVersion(kubernetesVersion: string): string {
  const m = /^v1\.(\d+)\.(\d+)$/.exec(kubernetesVersion);
  if (!m) throw new Error(`not a Kubernetes release tag: ${kubernetesVersion}`);
  return `v0.${m[1]}.${m[2]}`;
}

/** Third-party CRDs, read from the Go modules their projects publish. */
export const THIRD_PARTY_MODULES = {
  cilium: { module: 'github.com/cilium/cilium', version: 'v1.20.2' },
  gatewayApi: { module: 'sigs.k8s.io/gateway-api', version: 'v1.6.3' },
  certManager: { module: 'github.com/cert-manager/cert-manager', version: 'v1.21.2' },
  istio: { module: 'istio.io/api', version: 'v1.32.0' },
  zalando: { module: 'github.com/zalando/postgres-operator', version: 'v1.15.1' },
  clusterApi: { module: 'sigs.k8s.io/cluster-api', version: 'v1.14.2' },
  // v3.6 requires Go 1.27; v3.5.7 is the newest the machine's Go 1.26 can read.
  argoCd: { module: 'github.com/argoproj/argo-cd/v3', version: 'v3.5.7' },
} as const;

/** An OS and CPU as Go and the release files name them. */
export type Platform = 'linux/amd64' | 'linux/arm64' | 'darwin/amd64' | 'darwin/arm64';

/** The binaries whose official release files can replace a build. */
export type ReleasedBinary =
  | 'kube-apiserver'
  | 'kube-controller-manager'
  | 'kubectl'
  | 'kubelet'
  | 'kube-proxy'
  | 'kube-scheduler'
  | 'etcd'
  | 'helm'
  | 'promtool';

/**
 * The sha256 of each official release file of the versions above, per platform: the
 * raw binary for Kubernetes (dl.k8s.io), the `.tar.gz` for etcd, helm and Prometheus.
 * A pin always wins: a download is installed only when it matches, and where the
 * release's own published checksum file says otherwise the download is refused.
 * A binary with no pin here is verified against that published file instead (see
 * releases.ts), except with `KUBE_OPERATORS_BINARIES=pinned`, where it is built.
 *
 * Each value was read from the project's published checksum file and agrees across
 * independent public pins (kubectl: dl.k8s.io's `kubectl.sha256`; helm: get.helm.sh's
 * `.sha256sum`). `node packages/controlplane/src/cli.ts checksums`, on a machine that
 * reaches the release hosts, prints the lines for the others, to be compared with the
 * release notes before committing.
 */
export const RELEASE_SHA256: Readonly<Record<ReleasedBinary, Readonly<Partial<Record<Platform, string>>>>> = {
  'kube-apiserver': {},
  'kube-controller-manager': {},
  kubectl: {
    'linux/amd64': 'ebbd080e7c2e275093b55915722043257eb24004363e20acb3c4d71919f88336',
  },
  // The node's three: verified against dl.k8s.io's `.sha256` beside each until pinned.
  kubelet: {},
  'kube-proxy': {},
  'kube-scheduler': {},
  etcd: {},
  helm: {
    'linux/amd64': '1e4ab49e429626cf6c6958d914248b78c9730803c2751b87627e171dc800e7bb',
    'linux/arm64': 'f14e804dfee240f55525b667488fe9adca349e63e00c9af634c0beb1421ac310',
  },
  promtool: {},
};
