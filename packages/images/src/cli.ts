/**
 * `npm run images [-- NAME ...] [--out DIR] [--push REGISTRY] [--containerd-archives]`:
 * builds every image of the catalog (or those named) into `DIR/<name>` (`dist/images` by
 * default) as OCI layouts, prints each one's compressed size and digest, with `--push`
 * copies them to `REGISTRY/<name>:<version>`, and with `--containerd-archives` also writes
 * `DIR/<name>.tar`, named `IMAGE_REGISTRY/<name>:<version>` as the charts refer to it, for
 * `ctr -n k8s.io images import` on a node without a registry. Exits 2 on bad input (an
 * unknown name, a missing Debian tool), 1 when a build, a push or an archive fails.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type BuiltImage, buildImage } from './build.ts';
import { IMAGE_REGISTRY, IMAGES, imageNamed } from './catalog.ts';
import { containerdArchive } from './containerd-archive.ts';
import { pushImage } from './push.ts';
import { requireTools } from './tools.ts';

const repo = join(import.meta.dirname, '..', '..', '..');

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** The sizes line of one image: its total and what it shares with the others. */
function describe(image: BuiltImage, all: readonly BuiltImage[]): string {
  const total = image.layers.reduce((n, l) => n + l.size, 0);
  const shared = image.layers
    .filter((l) => all.some((o) => o !== image && o.layers.some((x) => x.digest === l.digest)))
    .reduce((n, l) => n + l.size, 0);
  return `${image.name}:${image.tag}  ${mb(total)} compressed (${mb(shared)} in layers shared with the others)  ${image.digest}  ${image.seconds.toFixed(1)} s`;
}

export async function main(argv: readonly string[]): Promise<number> {
  let values: { out?: string; push?: string; 'containerd-archives'?: boolean; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        out: { type: 'string' },
        push: { type: 'string' },
        'containerd-archives': { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(
      `usage: npm run images -- [NAME ...] [--out DIR] [--push REGISTRY] [--containerd-archives]\n` +
        `  --containerd-archives  also write DIR/<name>.tar, named ${IMAGE_REGISTRY}/<name>:<version>, for ctr -n k8s.io images import\n` +
        `images: ${IMAGES.map((i) => i.name).join(', ')}\n`,
    );
    return 0;
  }
  let specs: typeof IMAGES;
  try {
    specs = positionals.length === 0 ? IMAGES : positionals.map(imageNamed);
    await requireTools();
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  const out = values.out ?? join(repo, 'dist', 'images');
  const log = (m: string): void => {
    process.stderr.write(`${m}\n`);
  };
  const built: BuiltImage[] = [];
  for (const spec of specs) {
    try {
      built.push(await buildImage(repo, spec, out, log));
    } catch (err) {
      process.stderr.write(`image ${spec.name}: ${(err as Error).message}\n`);
      return 1;
    }
  }
  for (const image of built) process.stdout.write(`${describe(image, built)}\n`);
  if (values['containerd-archives']) {
    for (const image of built) {
      const tar = join(out, `${image.name}.tar`);
      try {
        await containerdArchive(image.layout, `${IMAGE_REGISTRY}/${image.name}:${image.tag}`, tar);
        process.stdout.write(`archived ${IMAGE_REGISTRY}/${image.name}:${image.tag} to ${tar}\n`);
      } catch (err) {
        process.stderr.write(`${(err as Error).message}\n`);
        return 1;
      }
    }
  }
  if (values.push !== undefined) {
    for (const image of built) {
      try {
        process.stdout.write(`pushed ${await pushImage(image, values.push)}\n`);
      } catch (err) {
        process.stderr.write(`${(err as Error).message}\n`);
        return 1;
      }
    }
  }
  return 0;
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
