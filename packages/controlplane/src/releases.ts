/**
 * Where each binary's official release file lives, the checksum the release publishes
 * beside it, and the mirror that can replace each host. The paths below a base are the
 * official ones, so a mirror is a copy of the release tree (as companies run them:
 * Artifactory, Nexus, a bucket): the pinned checksums stay valid for it, and the
 * release's own checksum file sits at the same relative path.
 *
 * Pure: the plan says what to fetch and what to trust; download.ts does the fetching and
 * binaries.ts decides what a failure means.
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

/**
 * The groups the cache holds, one folder per group and version. `kubernetes-node` (kubelet,
 * kube-proxy, kube-scheduler) is its own group, not part of `kubernetes`: a node is needed
 * by the end-to-end suite only, and adding binaries to `kubernetes` would make every
 * machine's cached plane incomplete and rebuild it.
 */
export type Component = 'kubernetes' | 'kubernetes-node' | 'etcd' | 'helm' | 'promtool';

/** A release host, its default base URL, and the variable that replaces it. */
export interface ReleaseHost {
  readonly env: string;
  readonly defaultBase: string;
}

/** dl.k8s.io serves both Kubernetes groups, so one variable names its mirror for both. */
const KUBERNETES_HOST: ReleaseHost = {
  env: 'KUBE_OPERATORS_KUBERNETES_RELEASES',
  defaultBase: 'https://dl.k8s.io/release',
};

/** The four hosts; each variable takes the base URL of a mirror of the same tree. */
export const RELEASE_HOSTS: Readonly<Record<Component, ReleaseHost>> = {
  kubernetes: KUBERNETES_HOST,
  'kubernetes-node': KUBERNETES_HOST,
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
  'kubernetes-node': ['kubelet', 'kube-proxy', 'kube-scheduler'],
  etcd: ['etcd'],
  helm: ['helm'],
  promtool: ['promtool'],
};

/** The version each group is pinned to. */
export const COMPONENT_VERSIONS: Readonly<Record<Component, string>> = {
  kubernetes: KUBERNETES_VERSION,
  'kubernetes-node': KUBERNETES_VERSION,
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
 * How a release writes the sha256 of its files. Read from each project's own release
 * tooling (public sources, checked when this was written):
 *  - Kubernetes: dl.k8s.io serves `<binary>.sha256` beside each binary, the bare digest;
 *    kubernetes/website `content/en/docs/tasks/tools/install-kubectl-linux.md` checks it
 *    with `echo "$(cat kubectl.sha256)  kubectl" | sha256sum --check`, and the same file
 *    exists for kube-apiserver, kube-controller-manager, kubelet, kube-proxy and kube-scheduler.
 *  - etcd: etcd-io/etcd `scripts/release.sh` writes the release's `SHA256SUMS` with
 *    `ls . | grep -E '\.tar.gz$|\.zip$' | xargs shasum -a 256 > ./SHA256SUMS`.
 *  - Prometheus: prometheus/promu `cmd/checksum.go` writes `sha256sums.txt` with
 *    `fmt.Fprintf(file, "%x  %s\n", checksum, filename)`, names relative to the tarballs folder.
 *  - helm: helm/helm's `Makefile` target `checksum` writes `<file>.sha256sum` with
 *    `shasum -a 256 "$f" | sed 's/_dist\///'` (and a bare `.sha256`, "can be removed in Helm v4").
 */
export type ChecksumFormat =
  /** The whole file is the 64 hex digits, with at most one final newline. */
  | 'bare-digest'
  /** Lines `<64 hex digits><space><space or *><file name>`, coreutils' and shasum's output. */
  | 'sha256sum-lines';

/** A checksum file the release publishes, and the name our file has in it. */
export interface PublishedChecksum {
  readonly checksumUrl: string;
  readonly format: ChecksumFormat;
  /** The release file's own name, as the checksum file's line names it. */
  readonly fileName: string;
}

/**
 * Why a downloaded file is believed to be the official one.
 *  - `pinned`: the sha256 in versions.ts, written by a maintainer. It always wins. When
 *    `crossCheck` is set (every mode but `pinned`) the release's own file is read too,
 *    and one that disagrees with the pin refuses the download: one of the two is wrong.
 *  - `published`: no pin for this file and platform; the sha256 is read from the
 *    release's own checksum file, on the same host (or mirror) as the file itself.
 */
export type Trust =
  | { readonly kind: 'pinned'; readonly sha256: string; readonly crossCheck: PublishedChecksum | undefined }
  | ({ readonly kind: 'published' } & PublishedChecksum);

/**
 * The official path below the base, and the binary's path inside the archive if it is
 * one, and where the release publishes the file's checksum (a path below the same base).
 * etcd publishes `.zip` files for macOS, which this does not read: etcd has no published
 * source there, and is downloaded on macOS only if a pin says which `.tar.gz` to trust.
 */
function layout(
  binary: ReleasedBinary,
  version: string,
  os: string,
  cpu: string,
): { path: string; member?: string; checksum: { path: string; format: ChecksumFormat } | undefined } {
  switch (binary) {
    case 'kube-apiserver':
    case 'kube-controller-manager':
    case 'kubectl':
    case 'kubelet':
    case 'kube-proxy':
    case 'kube-scheduler': {
      const path = `/${version}/bin/${os}/${cpu}/${binary}`;
      return { path, checksum: { path: `${path}.sha256`, format: 'bare-digest' } };
    }
    case 'etcd':
      return {
        path: `/${version}/etcd-${version}-${os}-${cpu}.tar.gz`,
        member: `etcd-${version}-${os}-${cpu}/etcd`,
        checksum: os === 'linux' ? { path: `/${version}/SHA256SUMS`, format: 'sha256sum-lines' } : undefined,
      };
    case 'helm': {
      const path = `/helm-${version}-${os}-${cpu}.tar.gz`;
      return {
        path,
        member: `${os}-${cpu}/helm`,
        checksum: { path: `${path}.sha256sum`, format: 'sha256sum-lines' },
      };
    }
    case 'promtool': {
      const release = prometheusRelease(version);
      return {
        path: `/v${release}/prometheus-${release}.${os}-${cpu}.tar.gz`,
        member: `prometheus-${release}.${os}-${cpu}/promtool`,
        checksum: { path: `/v${release}/sha256sums.txt`, format: 'sha256sum-lines' },
      };
    }
  }
}

export type ReleasePlan =
  | { readonly kind: 'download'; readonly files: readonly ReleaseFile[] }
  /**
   * Some binary of the group has neither a pin nor (where the policy allows one) a
   * published checksum file: nothing to check a download against. `why` says so in words.
   */
  | { readonly kind: 'unverifiable'; readonly missing: readonly string[]; readonly why: string };

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

/** The release's own checksum file for a binary's release file, below the same `base`. */
export function publishedChecksum(
  component: Component,
  binary: ReleasedBinary,
  onPlatform: Platform,
  base: string = releaseBase(component),
): PublishedChecksum | undefined {
  const [os, cpu] = onPlatform.split('/') as [string, string];
  const { path, checksum } = layout(binary, COMPONENT_VERSIONS[component], os, cpu);
  if (checksum === undefined) return undefined;
  return {
    checksumUrl: `${base}${checksum.path}`,
    format: checksum.format,
    fileName: path.slice(path.lastIndexOf('/') + 1),
  };
}

/** Which trust sources a plan may use: `KUBE_OPERATORS_BINARIES=pinned` allows only pins. */
export type TrustPolicy = 'pinned-only' | 'pinned-or-published';

/** What to fetch for a group on a platform and what to check it against, or why it cannot be fetched. */
export function releasePlan(
  component: Component,
  onPlatform: Platform | undefined,
  base: string = releaseBase(component),
  checksums: Checksums = RELEASE_SHA256,
  policy: TrustPolicy = 'pinned-or-published',
): ReleasePlan {
  const binaries = COMPONENT_BINARIES[component];
  if (onPlatform === undefined) {
    return {
      kind: 'unverifiable',
      missing: binaries,
      why: `no release of ${binaries.join(', ')} is published for ${platform()}/${arch()}`,
    };
  }
  const files: ReleaseFile[] = [];
  const missing: ReleasedBinary[] = [];
  for (const binary of binaries) {
    const pin = checksums[binary][onPlatform];
    const published =
      policy === 'pinned-or-published' ? publishedChecksum(component, binary, onPlatform, base) : undefined;
    let trust: Trust;
    if (pin !== undefined) {
      trust = { kind: 'pinned', sha256: pin, crossCheck: published };
    } else if (published !== undefined) {
      trust = { kind: 'published', ...published };
    } else {
      missing.push(binary);
      continue;
    }
    files.push({ binary, trust, ...releaseLocation(component, binary, onPlatform, base) });
  }
  if (missing.length === 0) return { kind: 'download', files };
  const unpinned = `no sha256 pinned in versions.ts for ${missing.join(', ')} on ${onPlatform}`;
  return {
    kind: 'unverifiable',
    missing,
    why:
      policy === 'pinned-only'
        ? `${unpinned} (KUBE_OPERATORS_BINARIES=pinned reads no published checksum file)`
        : `${unpinned}, and no published checksum file this reads (etcd's macOS releases are .zip files)`,
  };
}

/** What a published checksum file says about our file: its digest, or why it cannot be used. */
export type ChecksumReading =
  | { readonly kind: 'digest'; readonly sha256: string }
  | { readonly kind: 'malformed'; readonly why: string };

const DIGEST = /^[0-9a-f]{64}$/;
/** `<digest><space><space or *><name>`: the text and binary markers of sha256sum and shasum. */
const LINE = /^([0-9a-f]{64}) [ *](.+)$/;

/**
 * Reads the digest of `fileName` from a published checksum file, strictly: anything that
 * is not exactly the format is malformed, never guessed at. Lowercase hex only, as every
 * one of the tools above writes it; at most one final newline; no blank or foreign lines;
 * exactly one line for our file (two lines for it, even agreeing, is a file nobody should
 * be trusting). Carriage returns are not accepted: no release writes them.
 */
export function parseChecksumFile(text: string, format: ChecksumFormat, fileName: string): ChecksumReading {
  if (text.length === 0) return { kind: 'malformed', why: 'the file is empty' };
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  switch (format) {
    case 'bare-digest':
      if (!DIGEST.test(body)) {
        return {
          kind: 'malformed',
          why: `it is not one sha256 (64 lowercase hex digits): ${JSON.stringify(body.slice(0, 80))}`,
        };
      }
      return { kind: 'digest', sha256: body };
    case 'sha256sum-lines': {
      const found: string[] = [];
      const lines = body.split('\n');
      for (const [i, line] of lines.entries()) {
        const m = LINE.exec(line);
        if (!m) {
          return {
            kind: 'malformed',
            why: `line ${i + 1} is not "<sha256>  <file name>": ${JSON.stringify(line.slice(0, 80))}`,
          };
        }
        if (m[2] === fileName) found.push(m[1] as string);
      }
      if (found.length === 0) return { kind: 'malformed', why: `it has no line for ${fileName}` };
      if (found.length > 1) {
        return { kind: 'malformed', why: `it has ${found.length} lines for ${fileName}` };
      }
      return { kind: 'digest', sha256: found[0] as string };
    }
  }
}
