/**
 * One image of an OCI layout as a tar that containerd imports without a registry
 * (`ctr -n k8s.io images import <tar>`), for a node that runs our images and has no
 * registry to pull them from.
 *
 * containerd names an imported image by the `io.containerd.image.name` annotation of its
 * descriptor in the archive's `index.json`; without it, the image is stored under a name
 * made of the tag alone, which no pod spec refers to. So the archive's index holds one
 * descriptor, the chosen manifest's, annotated with the full name and the tag, and the
 * blobs reachable from it (not the layout's other images).
 *
 * The archive is byte for byte the same from the same layout: GNU tar with entries sorted
 * by name, times at `SOURCE_DATE_EPOCH`, root owner, fixed modes (as `layer-tar.ts`). The
 * blobs are hard links to the layout's (a symbolic link across filesystems) in a staging
 * folder that tar streams from: nothing of a layer passes through this process's memory.
 * The tar is written beside `out` and renamed into place when complete.
 */
import { execFile } from 'node:child_process';
import { link, mkdir, mkdtemp, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { sourceDateEpoch } from './layer-tar.ts';

const execFileP = promisify(execFile);

/** The annotation containerd names an imported image by. */
export const CONTAINERD_IMAGE_NAME = 'io.containerd.image.name';
/** The OCI annotation a layout's index tags a manifest with (umoci and skopeo write the tag alone). */
export const OCI_REF_NAME = 'org.opencontainers.image.ref.name';

const INDEX_MEDIA_TYPES = new Set([
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
]);
const MANIFEST_MEDIA_TYPES = new Set([
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
]);

export interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly platform?: Readonly<Record<string, unknown>>;
}

export interface OciIndex {
  readonly schemaVersion?: number;
  readonly manifests: readonly Descriptor[];
}

/**
 * The tag of an image reference `[host[:port]/]path:tag`. A reference without a tag (or
 * by digest) is refused: containerd stores the name as given, and a name without a tag
 * is not what a pod spec's `image` resolves to.
 */
export function referenceTag(imageName: string): string {
  const slash = imageName.lastIndexOf('/');
  const colon = imageName.lastIndexOf(':');
  if (imageName.includes('@') || colon <= slash || colon === imageName.length - 1) {
    throw new Error(
      `image name ${JSON.stringify(imageName)} has no tag: give it as [registry/]path:tag (for example ghcr.io/org/app:1.2.3)`,
    );
  }
  return imageName.slice(colon + 1);
}

/** Which manifest of a layout's index an archive holds, or why none can be chosen. */
export type ManifestChoice =
  | { readonly kind: 'chosen'; readonly descriptor: Descriptor; readonly by: 'name' | 'tag' | 'only' }
  | { readonly kind: 'refused'; readonly message: string };

function describeDescriptor(d: Descriptor): string {
  const names = [d.annotations?.[CONTAINERD_IMAGE_NAME], d.annotations?.[OCI_REF_NAME]].filter(
    (n) => n !== undefined,
  );
  return names.length > 0 ? `${d.digest} (${names.join(', ')})` : `${d.digest} (no name or tag)`;
}

/**
 * The manifest for `imageName` among `index`'s, in this order:
 *
 * 1. those whose `io.containerd.image.name` is `imageName`;
 * 2. else those whose `org.opencontainers.image.ref.name` is the tag, or the full name
 *    (the OCI spec allows either);
 * 3. else the index's only descriptor, when it carries neither annotation (a layout that
 *    holds one untagged image).
 *
 * Several descriptors of one digest count as one. Anything else is refused with a message
 * that lists every descriptor: an archive must never hold an image picked by its position.
 */
export function chooseManifest(index: OciIndex, imageName: string): ManifestChoice {
  const tag = referenceTag(imageName);
  const all = index.manifests;
  const pick = (
    matches: readonly Descriptor[],
    by: 'name' | 'tag' | 'only',
    what: string,
  ): ManifestChoice | undefined => {
    const digests = [...new Set(matches.map((d) => d.digest))];
    if (digests.length === 0) return undefined;
    if (digests.length === 1) return { kind: 'chosen', descriptor: matches[0]!, by };
    return {
      kind: 'refused',
      message: `${matches.length} manifests are ${what}, which one is meant is ambiguous: ${matches.map(describeDescriptor).join('; ')}`,
    };
  };
  const byName = pick(
    all.filter((d) => d.annotations?.[CONTAINERD_IMAGE_NAME] === imageName),
    'name',
    `named ${imageName}`,
  );
  if (byName) return byName;
  const byTag = pick(
    all.filter((d) => d.annotations?.[OCI_REF_NAME] === tag || d.annotations?.[OCI_REF_NAME] === imageName),
    'tag',
    `tagged ${tag}`,
  );
  if (byTag) return byTag;
  const only = all[0];
  if (
    all.length === 1 &&
    only !== undefined &&
    only.annotations?.[OCI_REF_NAME] === undefined &&
    only.annotations?.[CONTAINERD_IMAGE_NAME] === undefined
  ) {
    return { kind: 'chosen', descriptor: only, by: 'only' };
  }
  if (all.length === 0) return { kind: 'refused', message: 'its index lists no manifest' };
  return {
    kind: 'refused',
    message:
      `none of its ${all.length} manifests is named ${imageName} or tagged ${tag}, and ` +
      `${all.length === 1 ? 'its only one is tagged otherwise' : 'there is more than one'}: ` +
      `${all.map(describeDescriptor).join('; ')}; tag the one meant (umoci tag, skopeo copy) or name it`,
  };
}

function blobPath(layout: string, digest: string): string {
  const [algorithm, hex] = digest.split(':');
  if (!algorithm || !hex || !/^[a-z0-9]+$/.test(algorithm) || !/^[a-f0-9]+$/.test(hex)) {
    throw new Error(`${layout}: descriptor digest ${JSON.stringify(digest)} is not <algorithm>:<hex>`);
  }
  return join(layout, 'blobs', algorithm, hex);
}

/**
 * The digests of every blob reachable from `root` (itself included), checked to exist
 * with the size their descriptor says: an index's manifests, a manifest's config and
 * layers. Only indexes and manifests are read, small JSON documents.
 */
async function reachableBlobs(layout: string, root: Descriptor): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const visit = async (d: Descriptor, from: string): Promise<void> => {
    if (found.has(d.digest)) return;
    const path = blobPath(layout, d.digest);
    const size = await stat(path).then(
      (s) => s.size,
      () => undefined,
    );
    if (size === undefined) throw new Error(`${layout} lacks the blob ${d.digest} that ${from} refers to`);
    if (size !== d.size) {
      throw new Error(`${layout}: the blob ${d.digest} is ${size} bytes, ${from} says ${d.size}`);
    }
    found.set(d.digest, path);
    if (INDEX_MEDIA_TYPES.has(d.mediaType)) {
      const index = JSON.parse(await readFile(path, 'utf8')) as OciIndex;
      for (const m of index.manifests) await visit(m, `the index ${d.digest}`);
    } else if (MANIFEST_MEDIA_TYPES.has(d.mediaType)) {
      const manifest = JSON.parse(await readFile(path, 'utf8')) as {
        config: Descriptor;
        layers: readonly Descriptor[];
      };
      await visit(manifest.config, `the manifest ${d.digest}`);
      for (const l of manifest.layers) await visit(l, `the manifest ${d.digest}`);
    }
  };
  await visit(root, 'index.json');
  return found;
}

/**
 * Writes to `out` an uncompressed tar of an OCI layout holding the image of `layoutDir`
 * for `imageName` (`registry/path:tag`; which one when there are several: see
 * {@link chooseManifest}), whose `index.json` annotates it with `io.containerd.image.name:
 * imageName` and `org.opencontainers.image.ref.name: tag`. Throws, leaving nothing at
 * `out`, when no manifest or more than one fits, or a blob is missing.
 */
export async function containerdArchive(layoutDir: string, imageName: string, out: string): Promise<void> {
  const tag = referenceTag(imageName);
  const index = JSON.parse(await readFile(join(layoutDir, 'index.json'), 'utf8')) as OciIndex;
  const choice = chooseManifest(index, imageName);
  if (choice.kind === 'refused') {
    throw new Error(`cannot archive ${imageName} from the OCI layout ${layoutDir}: ${choice.message}`);
  }
  const blobs = await reachableBlobs(layoutDir, choice.descriptor);
  const descriptor: Descriptor = {
    ...choice.descriptor,
    annotations: {
      ...choice.descriptor.annotations,
      [CONTAINERD_IMAGE_NAME]: imageName,
      [OCI_REF_NAME]: tag,
    },
  };
  const archiveIndex = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [descriptor],
  };
  await mkdir(dirname(out), { recursive: true });
  const work = await mkdtemp(join(dirname(out), `.${basename(out)}-`));
  try {
    const root = join(work, 'layout');
    await mkdir(root);
    await writeFile(join(root, 'oci-layout'), `${JSON.stringify({ imageLayoutVersion: '1.0.0' })}\n`);
    await writeFile(join(root, 'index.json'), `${JSON.stringify(archiveIndex)}\n`);
    for (const [digest, source] of [...blobs].sort(([a], [b]) => a.localeCompare(b))) {
      const [algorithm, hex] = digest.split(':');
      const target = join(root, 'blobs', algorithm!, hex!);
      await mkdir(dirname(target), { recursive: true });
      // A hard link shares the file; across filesystems a symbolic link, followed by tar.
      await link(source, target).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EXDEV' && err.code !== 'EPERM') throw err;
        await symlink(source, target);
      });
    }
    const tmp = join(work, 'archive.tar');
    await execFileP(
      'tar',
      [
        '--create',
        `--file=${tmp}`,
        `--directory=${root}`,
        '--sort=name',
        '--dereference',
        '--hard-dereference',
        `--mtime=@${sourceDateEpoch()}`,
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        '--mode=u=rwX,go=rX',
        '--format=posix',
        '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
        'blobs',
        'index.json',
        'oci-layout',
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    ).catch((err: { stderr?: string; message: string }) => {
      throw new Error(`tar of ${imageName} failed: ${err.stderr?.trim() || err.message}`);
    });
    await rename(tmp, out);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
