/**
 * Every image a local node runs, as archives its containerd imports without a registry
 * (`ctr images import`): the project's images of the catalog, the sandbox ("pause")
 * image from our own pause build, and a kubectl image from our own kubectl for the
 * charts' `helm test` pods. The last two carry local names (`localhost/...`): they are
 * our builds of upstream's sources, not upstream's published images, and a reader of
 * `crictl images` should not mistake them.
 */
import { join } from 'node:path';
import type { Log } from './base.ts';
import { buildImage } from './build.ts';
import { IMAGE_REGISTRY, IMAGES } from './catalog.ts';
import { containerdArchive } from './containerd-archive.ts';
import { staticBinaryImage } from './static-binary-image.ts';
import { requireTools } from './tools.ts';

export interface NodeImageArchives {
  /** The sandbox image's archive. */
  readonly pause: string;
  /** The kubectl image's archive. */
  readonly kubectl: string;
  /** The catalog's images by name: the reference charts use, and the archive. */
  readonly project: Readonly<Record<string, { readonly reference: string; readonly archive: string }>>;
}

export interface NodeImageOptions {
  readonly repo: string;
  /** Where layouts and archives are written. */
  readonly out: string;
  readonly pause: { readonly binary: string; readonly name: string };
  readonly kubectl: { readonly binary: string; readonly name: string };
  readonly log: Log;
}

/** Builds (from the layer caches) and archives every image a node of the e2e suite or `up --node` runs. */
export async function nodeImageArchives(o: NodeImageOptions): Promise<NodeImageArchives> {
  await requireTools();
  const started = Date.now();
  // Upstream's pause image runs as 65535; the kubectl image as our other images do.
  const pauseTar = await archiveBinary(o.out, 'pause', o.pause, '/pause', 65535);
  const kubectlTar = await archiveBinary(o.out, 'kubectl', o.kubectl, '/bin/kubectl', 65532);
  const project: Record<string, { reference: string; archive: string }> = {};
  for (const spec of IMAGES) {
    const image = await buildImage(o.repo, spec, join(o.out, 'project'), o.log);
    const reference = `${IMAGE_REGISTRY}/${image.name}:${image.tag}`;
    const archive = join(o.out, `${image.name}.tar`);
    await containerdArchive(image.layout, reference, archive);
    project[spec.name] = { reference, archive };
  }
  o.log(`node images built and archived in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { pause: pauseTar, kubectl: kubectlTar, project };
}

/** One static binary as an image whose entrypoint it is, archived for containerd. */
async function archiveBinary(
  out: string,
  file: string,
  source: { readonly binary: string; readonly name: string },
  pathInImage: string,
  user: number,
): Promise<string> {
  const image = await staticBinaryImage({
    binary: source.binary,
    pathInImage,
    entrypoint: [pathInImage],
    user,
    name: source.name,
    out: join(out, file),
  });
  const archive = join(out, `${file}.tar`);
  await containerdArchive(image.layout, source.name, archive);
  return archive;
}
