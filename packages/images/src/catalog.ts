/**
 * Every image the project publishes: one per operator and one per separate service.
 * The one list that the image build (`build.ts`), the Dockerfiles (`images/` at the
 * repository's root) and the charts' default `image.repository` values are checked
 * against.
 *
 * Each image holds the repository's layout under `APP_DIR` (the root `package.json`
 * and lock, the production dependencies, the workspaces' sources), because the code is
 * TypeScript run by Node's type stripping, which refuses files under `node_modules`:
 * the workspaces stay at their own paths, linked from `node_modules/@operators/*` as npm
 * links them.
 */

/** Where the project's images are published; `npm run images -- --push REGISTRY` pushes elsewhere. */
export const IMAGE_REGISTRY = 'ghcr.io/kube-operators-ts';

/** Where the application lives in every image: the working directory, and the root of the repository's layout. */
export const APP_DIR = '/app';

/** The user every image runs as (the "nonroot" of distroless images), no home, no shell. */
export const IMAGE_USER = 65532;

export interface ImageSpec {
  /** The repository's last path segment: `${IMAGE_REGISTRY}/${name}`. */
  readonly name: string;
  /**
   * The workspaces whose sources the image holds (`package.json`, `src/`, `bin/`): the
   * operator's and the packages it imports. Production dependencies are those of every
   * workspace, one layer shared by all images (see `app.ts`).
   */
  readonly workspaces: readonly string[];
  /** The file `node` runs, relative to the repository's root: the entrypoint is `node APP_DIR/<entry>`. */
  readonly entry: string;
  /** Debian packages beyond the base's (Node's shared libraries and CA certificates). */
  readonly extraPackages: readonly string[];
  /** Environment the image sets. */
  readonly env: Readonly<Record<string, string>>;
  readonly description: string;
}

/**
 * The decider preloads jemalloc: glibc's allocator keeps what the list worker's thread
 * arenas held after a reload (404 MB at rest against 285 MB with jemalloc, with three
 * million prefixes: docs/exoledge.md, "Performance and memory").
 */
const JEMALLOC_AMD64 = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2';

/** git, ssh, and the shared libraries they link (Debian bookworm's names). */
const GIT_PACKAGES: readonly string[] = [
  'git',
  'openssh-client',
  'libcurl3-gnutls',
  'libexpat1',
  'libpcre2-8-0',
  'zlib1g',
  'libbrotli1',
  'libcom-err2',
  'libgnutls30',
  'libgssapi-krb5-2',
  'libhogweed6',
  'libidn2-0',
  'libk5crypto3',
  'libkeyutils1',
  'libkrb5-3',
  'libkrb5support0',
  'libldap-2.5-0',
  'libnettle8',
  'libnghttp2-14',
  'libp11-kit0',
  'libpsl5',
  'librtmp1',
  'libsasl2-2',
  'libsasl2-modules-db',
  'libssh2-1',
  'libssl3',
  'libtasn1-6',
  'libunistring2',
  'libzstd1',
  'libgmp10',
  'libffi8',
  'libcrypt1',
  'libdb5.3',
  'libedit2',
  'libfido2-1',
  'libselinux1',
  'libbsd0',
  'libmd0',
  'libcbor0.8',
  'libtinfo6',
  'libudev1',
];

export const IMAGES: readonly ImageSpec[] = [
  {
    name: 'weebo-link',
    workspaces: ['operators/weebo-link', 'packages/kit', 'packages/cel'],
    entry: 'operators/weebo-link/bin/weebo-link.js',
    extraPackages: [],
    env: {},
    description: 'weebo-link: CRD-less links between operators’ CRs',
  },
  {
    name: 'exoledge-operator',
    workspaces: ['operators/exoledge', 'packages/kit'],
    entry: 'operators/exoledge/src/main.ts',
    extraPackages: [],
    env: {},
    description: 'exoledge operator: BlocklistSources and EdgeSites',
  },
  {
    name: 'exoledge-decider',
    workspaces: ['operators/exoledge', 'packages/kit'],
    entry: 'operators/exoledge/src/decider/main.ts',
    extraPackages: ['libjemalloc2'],
    env: { LD_PRELOAD: JEMALLOC_AMD64 },
    description: 'exoledge decider: verdicts for Envoy ext_authz',
  },
  {
    name: 'exoledge-bridge',
    workspaces: ['operators/exoledge', 'packages/kit'],
    entry: 'operators/exoledge/src/bridge/main.ts',
    extraPackages: [],
    env: {},
    description: 'exoledge console bridge: EdgeSite manifests checked by a dry-run',
  },
  {
    name: 'terdut-operator',
    workspaces: ['operators/terdut', 'packages/kit'],
    entry: 'operators/terdut/src/main.ts',
    extraPackages: [],
    env: {},
    description: 'terdut-operator: terdut-server and its teams as CRs',
  },
  {
    name: 'gitops-reverser',
    workspaces: ['operators/gitops-reverser', 'packages/kit'],
    entry: 'operators/gitops-reverser/src/main.ts',
    // The operator runs git (and ssh for ssh:// remotes) as processes. `apt-get download`
    // resolves no dependency, so the libraries they link are listed too (checked by the
    // node suite: a pod of this image pushes to a remote; and `ldd` of each binary). Not
    // perl: git's perl scripts (send-email, svn, ...) are not used.
    extraPackages: GIT_PACKAGES,
    env: {},
    description: 'gitops-reverser: live objects mirrored into Git',
  },
  {
    name: 'permissions-operator',
    workspaces: ['operators/permissions', 'packages/kit'],
    entry: 'operators/permissions/src/main.ts',
    extraPackages: [],
    env: {},
    description: 'permissions operator: roles, bindings, an OPA bundle and webhooks',
  },
];

/** The image named `name`, or an error listing the names there are. */
export function imageNamed(name: string): ImageSpec {
  const spec = IMAGES.find((i) => i.name === name);
  if (spec === undefined) {
    throw new Error(`no image ${name}; the images are ${IMAGES.map((i) => i.name).join(', ')}`);
  }
  return spec;
}
