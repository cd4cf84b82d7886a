/**
 * A minimal OCI image layout around one static binary, for the images a node needs that
 * we cannot pull: the sandbox image (`registry.k8s.io/pause` from our pause binary) and
 * the image the charts' `helm test` pods run (`registry.k8s.io/kubectl` from our kubectl).
 * No base, no shell, no libc: the binary, its folders, and a configuration.
 *
 * The layer is an uncompressed tar: the image is imported on this machine, never pulled
 * over a network, so gzip would only cost time at build and at unpack; and the bytes of
 * a gzip stream depend on the compressor's implementation and version, which would make
 * the digest depend on the Node (zlib) that built it, while a tar from GNU tar's fixed
 * options depends only on the binary. It also makes the layer's digest its diff ID.
 *
 * Same inputs, same manifest digest: the layer is built as `layer-tar.ts` builds layers
 * (sorted, times at `SOURCE_DATE_EPOCH`, root owner), the configuration's `created` and
 * history are that epoch, and the JSON documents are written with a fixed key order.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { OCI_REF_NAME, referenceTag } from './containerd-archive.ts';
import { sourceDateEpoch, tarFolder } from './layer-tar.ts';

export interface StaticBinaryImageOptions {
  /** The binary on this machine; static, as nothing else is in the image. */
  readonly binary: string;
  /** Its absolute path in the image (`/pause`, `/bin/kubectl`). */
  readonly pathInImage: string;
  /** The configuration's entrypoint (`['/pause']`); a pod's `args` come after it. */
  readonly entrypoint: readonly string[];
  /** The user the image runs as: a uid (written `uid:uid`, as upstream's images) or `uid:gid`. */
  readonly user: number | string;
  /** The image's name, `registry/path:tag`; the layout's index tags it with the tag. */
  readonly name: string;
  /** The OCI layout folder to write (replaced if present). */
  readonly out: string;
}

export interface StaticBinaryImage {
  readonly name: string;
  readonly tag: string;
  readonly layout: string;
  /** The manifest's digest, `sha256:...`. */
  readonly digest: string;
}

/** The machine's architecture as the OCI image spec names it (Go's GOARCH). */
export function ociArchitecture(arch: NodeJS.Architecture = process.arch): string {
  switch (arch) {
    case 'x64':
      return 'amd64';
    case 'arm64':
      return 'arm64';
    default:
      throw new Error(
        `no OCI architecture known for Node's ${arch}; this machine builds amd64 or arm64 images`,
      );
  }
}

function sha256(bytes: string): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return `sha256:${hash.digest('hex')}`;
}

/** Writes `content` as a blob of `layout`, returning its descriptor's digest and size. */
async function writeBlob(layout: string, content: string): Promise<{ digest: string; size: number }> {
  const digest = sha256(content);
  await writeFile(join(layout, 'blobs', 'sha256', digest.slice('sha256:'.length)), content);
  return { digest, size: Buffer.byteLength(content) };
}

/** Builds the image of {@link StaticBinaryImageOptions} into `out` as an OCI layout. */
export async function staticBinaryImage(options: StaticBinaryImageOptions): Promise<StaticBinaryImage> {
  const { binary, pathInImage, entrypoint, user, name, out } = options;
  const tag = referenceTag(name);
  const inImage = posix.normalize(pathInImage);
  if (!posix.isAbsolute(inImage) || inImage === '/') {
    throw new Error(`pathInImage ${JSON.stringify(pathInImage)} must be an absolute file path`);
  }
  if (entrypoint.length === 0) throw new Error(`image ${name}: the entrypoint is empty`);
  if (!(await stat(binary)).isFile()) throw new Error(`${binary} is not a file`);
  const created = new Date(sourceDateEpoch() * 1000).toISOString();

  await mkdir(dirname(out), { recursive: true });
  const work = await mkdtemp(join(dirname(out), '.static-image-'));
  try {
    // The layer's folders get the modes a root filesystem has, whatever the umask.
    const rootfs = join(work, 'rootfs');
    const target = join(rootfs, inImage);
    await mkdir(dirname(target), { recursive: true });
    for (let d = dirname(inImage); ; d = posix.dirname(d)) {
      await chmod(join(rootfs, d), 0o755);
      if (d === '/') break;
    }
    await copyFile(binary, target);
    await chmod(target, 0o755);
    const layerTar = join(work, 'layer.tar');
    await tarFolder(rootfs, layerTar);
    const layer = { digest: await sha256File(layerTar), size: (await stat(layerTar)).size };

    const layout = join(work, 'layout');
    const blobs = join(layout, 'blobs', 'sha256');
    await mkdir(blobs, { recursive: true });
    await rename(layerTar, join(blobs, layer.digest.slice('sha256:'.length)));

    const architecture = ociArchitecture();
    const config = await writeBlob(
      layout,
      JSON.stringify({
        created,
        architecture,
        os: 'linux',
        config: {
          User: typeof user === 'number' ? `${user}:${user}` : user,
          Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
          Entrypoint: [...entrypoint],
          WorkingDir: '/',
        },
        rootfs: { type: 'layers', diff_ids: [layer.digest] },
        history: [{ created, created_by: `static binary ${inImage}` }],
      }),
    );
    const manifest = await writeBlob(
      layout,
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
      }),
    );
    await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    await writeFile(
      join(layout, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.index.v1+json',
        manifests: [
          {
            mediaType: 'application/vnd.oci.image.manifest.v1+json',
            ...manifest,
            platform: { architecture, os: 'linux' },
            annotations: { [OCI_REF_NAME]: tag },
          },
        ],
      }),
    );
    // The complete layout replaces the previous one; until this rename there is only the old.
    const old = `${out}.old-${process.pid}`;
    await rename(out, old).catch(() => undefined);
    await rename(layout, out);
    await rm(old, { recursive: true, force: true });
    return { name, tag, layout: out, digest: manifest.digest };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
