/**
 * Where each binary's official release file lives, and the mirror that can replace
 * each host. The paths below a base are the official ones, so a mirror is a copy of the
 * release tree (as companies run them: Artifactory, Nexus, a bucket) and the pinned
 * checksums stay valid for it.
 */
import { arch, platform } from 'node:os';
import type { ReleaseFile } from './download.ts';
import {
  ETCD_VERSION,
  HELM_VERSION,
  KUBERNETES_VERSION,
  type Platform,
  PROMTOOL_VERSION,
  prometheusRelease,
  RELEASE_SHA256,
  type ReleasedBinary,
} from './versions.ts';

/** The groups the cache holds, one folder per group and version. */
export type Component = 'kubernetes' | 'etcd' | 'helm' | 'promtool';

/** A release host, its default base URL, and the variable that replaces it. */
export interface ReleaseHost {
  readonly env: string;
  readonly defaultBase: string;
}

/** The four hosts; each variable takes the base URL of a mirror of the same tree. */
export const RELEASE_HOSTS: Readonly<Record<Component, ReleaseHost>> = {
  kubernetes: { env: 'KUBE_OPERATORS_KUBERNETES_RELEASES', defaultBase: 'https://dl.k8s.io/release' },
  etcd: {
    env: 'KUBE_OPERATORS_ETCD_RELEASES',
    defaultBase: 'https://github.com/etcd-io/etcd/releases/download',
  },
  helm: { env: 'KUBE_OPERATORS_HELM_RELEASES', defaultBase: 'https://get.helm.sh' },
  promtool: {
    env: 'KUBE_OPERATORS_PROMETHEUS_RELEASES',
    defaultBase: 'https://github.com/prometheus/prometheus/releases/download',
  },
};

/** The binaries of each group. */
export const COMPONENT_BINARIES: Readonly<Record<Component, readonly ReleasedBinary[]>> = {
  kubernetes: ['kube-apiserver', 'kube-controller-manager', 'kubectl'],
  etcd: ['etcd'],
  helm: ['helm'],
  promtool: ['promtool'],
};

/** The version each group is pinned to. */
export const COMPONENT_VERSIONS: Readonly<Record<Component, string>> = {
  kubernetes: KUBERNETES_VERSION,
  etcd: ETCD_VERSION,
  helm: HELM_VERSION,
  promtool: PROMTOOL_VERSION,
};

/** This machine's platform in Go's words, or undefined where no release is published for it. */
export function currentPlatform(): Platform | undefined {
  const os = { linux: 'linux', darwin: 'darwin' }[platform() as string];
  const cpu = { x64: 'amd64', arm64: 'arm64' }[arch() as string];
  return os && cpu ? (`${os}/${cpu}` as Platform) : undefined;
}

/** A mirror's base URL from the environment, else the official one; never with a trailing slash. */
export function releaseBase(component: Component, env: NodeJS.ProcessEnv = process.env): string {
  const host = RELEASE_HOSTS[component];
  return (env[host.env] || host.defaultBase).replace(/\/+$/, '');
}

/**
 * The official path below the base, and the binary's path inside the archive if it is
 * one. etcd publishes `.zip` files for macOS, which this does not read: no darwin etcd
 * checksum is pinned, so etcd is built there.
 */
function layout(
  binary: ReleasedBinary,
  version: string,
  os: string,
  cpu: string,
): { path: string; member?: string } {
  switch (binary) {
    case 'kube-apiserver':
    case 'kube-controller-manager':
    case 'kubectl':
      return { path: `/${version}/bin/${os}/${cpu}/${binary}` };
    case 'etcd':
      return {
        path: `/${version}/etcd-${version}-${os}-${cpu}.tar.gz`,
        member: `etcd-${version}-${os}-${cpu}/etcd`,
      };
    case 'helm':
      return { path: `/helm-${version}-${os}-${cpu}.tar.gz`, member: `${os}-${cpu}/helm` };
    case 'promtool': {
      const release = prometheusRelease(version);
      return {
        path: `/v${release}/prometheus-${release}.${os}-${cpu}.tar.gz`,
        member: `prometheus-${release}.${os}-${cpu}/promtool`,
      };
    }
  }
}

export type ReleasePlan =
  | { readonly kind: 'download'; readonly files: readonly ReleaseFile[] }
  /** Some binary of the group has no pinned checksum for this platform. */
  | { readonly kind: 'unpinned'; readonly missing: readonly string[] };

/** The checksums a plan is made from: the pinned ones, or a test's for its stand-in host. */
export type Checksums = Readonly<Record<ReleasedBinary, Readonly<Partial<Record<Platform, string>>>>>;

/** The official URL of a binary's release file below `base`, and its member if an archive. */
export function releaseLocation(
  component: Component,
  binary: ReleasedBinary,
  onPlatform: Platform,
  base: string = releaseBase(component),
): { url: string; member?: string } {
  const [os, cpu] = onPlatform.split('/') as [string, string];
  const { path, member } = layout(binary, COMPONENT_VERSIONS[component], os, cpu);
  return { url: `${base}${path}`, ...(member === undefined ? {} : { member }) };
}

/** What to fetch for a group on a platform, or why it cannot be fetched. */
export function releasePlan(
  component: Component,
  onPlatform: Platform | undefined,
  base: string = releaseBase(component),
  checksums: Checksums = RELEASE_SHA256,
): ReleasePlan {
  const binaries = COMPONENT_BINARIES[component];
  if (onPlatform === undefined) {
    return {
      kind: 'unpinned',
      missing: binaries.map((b) => `${b} (no release for ${platform()}/${arch()})`),
    };
  }
  const files: ReleaseFile[] = [];
  const missing: string[] = [];
  for (const binary of binaries) {
    const sha256 = checksums[binary][onPlatform];
    if (sha256 === undefined) {
      missing.push(binary);
      continue;
    }
    files.push({ binary, sha256, ...releaseLocation(component, binary, onPlatform, base) });
  }
  return missing.length ? { kind: 'unpinned', missing } : { kind: 'download', files };
}
