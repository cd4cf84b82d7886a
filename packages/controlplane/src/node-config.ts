/**
 * The configuration files of a node (see node.ts), rendered from one {@link NodeLayout}.
 * Pure: every path, address and port a process uses is decided here, so a reader can see
 * the whole node in one place, and a test can check the decisions without starting it.
 *
 * The choices, and why:
 *  - One fixed set of addresses, all private and all on this machine: the node's own
 *    address is the pods' gateway on their bridge (the apiserver, the kubelet and DNS listen there, so pods can
 *    reach them, while nothing listens on the machine's real interfaces), pods on a CNI
 *    bridge, Services in the plane's range. Pods have no masquerade and no route out of
 *    the machine: a FORWARD rule drops what they send anywhere but the bridge.
 *  - containerd's CRI keeps its state, sockets and network-namespace mounts under the
 *    node's folder; `restrict_oom_score_adj` because these machines' capability bounding
 *    set lacks CAP_SYS_RESOURCE, and runc cannot lower a sandbox's oom_score_adj to -998
 *    without it (every sandbox failed with "can't get final child's PID from pipe").
 *  - kubelet on cgroupfs (no systemd here), accepting the machine's cgroup v1, with client
 *    certificates and webhook authorisation, its read-only port closed.
 *  - No image is pulled: every registry's name leads to a closed local port (see
 *    {@link registryHostsToml}); the node's images are imported into containerd.
 *  - Cluster DNS is CoreDNS as a process on the node's address, answering for
 *    `cluster.local` only: no forwarder, so no name outside the cluster resolves.
 */

/** Where the node lives and how it is addressed. */
export interface NodeLayout {
  /** The node's folder: every state, socket, log and mount of the node is under it. */
  readonly dir: string;
  /** The Node object's name (`--hostname-override`). */
  readonly name: string;
  /** The node's address, on {@link NodeLayout.bridge}: apiserver, kubelet and DNS listen here. */
  readonly ip: string;
  /** The CNI bridge pods attach to; it also holds {@link NodeLayout.ip}. */
  readonly bridge: string;
  /** The pods' addresses (the bridge's subnet); the bridge takes the first. */
  readonly podCidr: string;
  /** The Services' range: the plane's `--service-cluster-ip-range`. */
  readonly serviceCidr: string;
  readonly kubeletPort: number;
  readonly kubeletHealthzPort: number;
  readonly proxyHealthzPort: number;
  readonly proxyMetricsPort: number;
  readonly schedulerPort: number;
  readonly dnsReadyPort: number;
  /** The binaries' paths the files name. */
  readonly runc: string;
  readonly cniBinDir: string;
  /** The sandbox image, imported before the kubelet starts (never pulled). */
  readonly sandboxImage: string;
}

/** The node's fixed addresses: private ranges no machine of ours routes elsewhere. */
export const NODE_ADDRESSES = {
  /**
   * The pods' gateway, on the bridge. One address for both roles: the CNI bridge plugin
   * adopts a bridge only if the gateway is its one IPv4 address.
   */
  ip: '10.244.0.1',
  podCidr: '10.244.0.0/24',
  bridge: 'kot-cni0',
} as const;

/** The files of the layout, by role. */
export function nodePaths(dir: string) {
  return {
    containerdConfig: `${dir}/containerd.toml`,
    containerdRoot: `${dir}/containerd/root`,
    containerdState: `${dir}/containerd/state`,
    containerdSocket: `${dir}/containerd/containerd.sock`,
    /** containerd's registry hosts folder (`config_path`): only `_default` is in it. */
    registryHosts: `${dir}/containerd/certs.d`,
    defaultRegistryHosts: `${dir}/containerd/certs.d/_default/hosts.toml`,
    cniConfDir: `${dir}/cni/net.d`,
    cniDataDir: `${dir}/cni/networks`,
    kubeletConfig: `${dir}/kubelet.yaml`,
    kubeletKubeconfig: `${dir}/kubelet.kubeconfig`,
    kubeletRoot: `${dir}/kubelet`,
    kubeletCerts: `${dir}/kubelet-pki`,
    kubeletServingCert: `${dir}/kubelet-pki/kubelet.crt`,
    kubeletServingKey: `${dir}/kubelet-pki/kubelet.key`,
    podLogs: `${dir}/pod-logs`,
    resolvConf: `${dir}/resolv.conf`,
    clientCa: `${dir}/ca.crt`,
    proxyConfig: `${dir}/kube-proxy.yaml`,
    proxyKubeconfig: `${dir}/kube-proxy.kubeconfig`,
    schedulerKubeconfig: `${dir}/kube-scheduler.kubeconfig`,
    corefile: `${dir}/Corefile`,
    dnsKubeconfig: `${dir}/coredns.kubeconfig`,
    state: `${dir}/state.json`,
  };
}

/** The bridge's own address: the pods' gateway, the first address of {@link NodeLayout.podCidr}. */
export function gatewayOf(podCidr: string): string {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(podCidr);
  if (!m) throw new Error(`not an IPv4 CIDR: ${podCidr}`);
  return `${m[1]}.${m[2]}.${m[3]}.${Number(m[4]) + 1}`;
}

/** The cluster's DNS domain, as the kubelet writes it into pods' resolv.conf. */
export const CLUSTER_DOMAIN = 'cluster.local';

export function containerdConfig(n: NodeLayout): string {
  const p = nodePaths(n.dir);
  return `# Rendered by packages/controlplane/src/node-config.ts: containerd 2, CRI only.
version = 3
root = '${p.containerdRoot}'
state = '${p.containerdState}'
disabled_plugins = ['io.containerd.nri.v1.nri', 'io.containerd.snapshotter.v1.btrfs', 'io.containerd.snapshotter.v1.zfs', 'io.containerd.snapshotter.v1.devmapper', 'io.containerd.snapshotter.v1.erofs', 'io.containerd.internal.v1.tracing', 'io.containerd.tracing.processor.v1.otlp']

[grpc]
  address = '${p.containerdSocket}'

[ttrpc]
  address = '${p.containerdSocket}.ttrpc'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '${n.sandboxImage}'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '${p.registryHosts}'

  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    enable_unprivileged_ports = false
    enable_unprivileged_icmp = false
    cdi_spec_dirs = []
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '${n.runc}'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['${n.cniBinDir}']
      conf_dir = '${p.cniConfDir}'
      max_conf_num = 1

  [plugins.'io.containerd.grpc.v1.cri']
    disable_tcp_service = true
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
`;
}

/** The port {@link registryHostsToml} sends every pull to: tcpmux's, which nothing here serves. */
export const NO_REGISTRY = '127.0.0.1:1';

/**
 * Every registry's hosts file (containerd's `_default` namespace, used for any registry
 * with no folder of its own): its one server is {@link NO_REGISTRY}. The node's images are
 * imported, never pulled, so a pull (a mistyped reference, an image nobody imported) fails
 * at once with "connection refused" on this machine, without asking DNS for the
 * registry's name or sending anything off the machine, whatever network it has.
 */
export function registryHostsToml(): string {
  return `# Rendered by packages/controlplane/src/node-config.ts: no pull leaves this machine.
server = "https://${NO_REGISTRY}"
`;
}

/**
 * The pod network: a bridge the host is the gateway of, addresses from `podCidr`, no
 * masquerade (nothing of a pod leaves the machine); hairpin so that a pod reaches itself
 * through its own Service; portmap for hostPort.
 */
export function cniConflist(n: NodeLayout): string {
  const p = nodePaths(n.dir);
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'kube-operators-ts',
      plugins: [
        {
          type: 'bridge',
          bridge: n.bridge,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: p.cniDataDir,
            ranges: [[{ subnet: n.podCidr, gateway: gatewayOf(n.podCidr) }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

export function kubeletConfig(n: NodeLayout): string {
  const p = nodePaths(n.dir);
  return `# Rendered by packages/controlplane/src/node-config.ts.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${n.ip}
port: ${n.kubeletPort}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${n.kubeletHealthzPort}
tlsCertFile: ${p.kubeletServingCert}
tlsPrivateKeyFile: ${p.kubeletServingKey}
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: ${p.clientCa} }
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://${p.containerdSocket}
cgroupDriver: cgroupfs
# These machines mount cgroup v1 controllers (hybrid); the kubelet refuses v1 unless told.
failCgroupV1: false
failSwapOn: false
clusterDNS: [${n.ip}]
clusterDomain: ${CLUSTER_DOMAIN}
resolvConf: ${p.resolvConf}
podLogsDir: ${p.podLogs}
serializeImagePulls: false
# Pods of the tests are small; the machine's own disk and memory are not the kubelet's to
# defend down to the default thresholds (10% disk free would evict on a full build cache).
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Status every 2 s: a restarted node is seen Ready, and a deleted pod's end reported, sooner.
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
`;
}

export function resolvConf(n: NodeLayout): string {
  // For pods with dnsPolicy Default: the same server, so they too resolve cluster names only.
  return `nameserver ${n.ip}\n`;
}

export function kubeProxyConfig(n: NodeLayout): string {
  const p = nodePaths(n.dir);
  return `# Rendered by packages/controlplane/src/node-config.ts.
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${p.proxyKubeconfig}
hostnameOverride: ${n.name}
mode: iptables
clusterCIDR: ${n.podCidr}
bindAddress: ${n.ip}
healthzBindAddress: 127.0.0.1:${n.proxyHealthzPort}
metricsBindAddress: 127.0.0.1:${n.proxyMetricsPort}
# Node ports on the node's own address only, never on the machine's interfaces.
nodePortAddresses: [${n.ip}/32]
iptables:
  # 127.0.0.1 node ports need route_localnet, a machine-wide sysctl: not ours to change.
  localhostNodePorts: false
  minSyncPeriod: 0s
  syncPeriod: 30s
# 0: leave the machine's conntrack limits as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`;
}

export function corefile(n: NodeLayout): string {
  const p = nodePaths(n.dir);
  return `# Rendered by packages/controlplane/src/node-config.ts: cluster names only, no forwarder.
.:53 {
    bind ${n.ip}
    errors
    ready 127.0.0.1:${n.dnsReadyPort}
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        kubeconfig ${p.dnsKubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
`;
}

/** The machine-wide settings the kubelet and the bridge plugin change; restored on stop. */
export const TOUCHED_SYSCTLS = [
  'vm/overcommit_memory',
  'kernel/panic',
  'kernel/panic_on_oops',
  'net/ipv4/ip_forward',
] as const;

/**
 * Paths compiled into containerd, the kubelet and the CNI plugins that their
 * configuration cannot move; removed on stop when the node created them.
 */
export const COMPILED_IN_PATHS = [
  '/run/containerd',
  '/var/lib/cni',
  '/var/lib/kubelet',
  '/var/log/containers',
  '/var/log/pods',
  '/etc/kubernetes',
] as const;

/**
 * Paths whose presence at start means another kubelet or containerd owns this machine:
 * a node refuses to start rather than share, or remove, what is theirs.
 */
export const FOREIGN_MARKERS = [
  '/run/containerd/containerd.sock',
  '/var/lib/kubelet/pki',
  '/var/lib/kubelet/config.yaml',
] as const;
