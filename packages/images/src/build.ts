/**
 * One image, assembled without a daemon: `umoci` writes an OCI image layout from the
 * layer tars (`base.ts`, `app.ts`) in a fixed order, most shared first, so images share
 * every layer below their own sources:
 *
 *   base (glibc, libstdc++) · [extra packages] · node · dependencies · app
 *
 * and sets the configuration: entrypoint `node APP_DIR/<entry>`, user `IMAGE_USER`,
 * working directory `APP_DIR`, the image's environment, OCI labels. Nothing in the image
 * needs a shell or a writable root.
 *
 * The layout is built in a temporary folder beside the destination and renamed into
 * place when complete: a failed build leaves the previous image, or none, never half of
 * one.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { appLayer, dependenciesLayer, NODE_PATH, nodeLayer } from './app.ts';
import { baseLayer, debianSource, extraPackagesLayer, type Log } from './base.ts';
import { APP_DIR, IMAGE_REGISTRY, IMAGE_USER, type ImageSpec } from './catalog.ts';
import { sourceDateEpoch } from './layer-tar.ts';

const execFileP = promisify(execFile);

/** The environment every image sets, before its own. */
/**
 * The file in a layout that records what it was built from (see imageKey): inside the
 * layout, so that nothing of the build sits beside it; image tools read only
 * `oci-layout`, `index.json` and `blobs/`.
 */
const LAYOUT_KEY = 'kube-operators-ts.key';

export const IMAGE_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  NODE_ENV: 'production',
};

export interface BuiltImage {
  readonly name: string;
  readonly tag: string;
  /** The OCI layout folder. */
  readonly layout: string;
  /** The manifest's digest (`sha256:...`), what a chart's `image.digest` pins. */
  readonly digest: string;
  /** The layers' compressed sizes, as a registry stores and a node pulls them. */
  readonly layers: readonly { readonly digest: string; readonly size: number }[];
  readonly seconds: number;
}

/** The version an image is tagged with: its operator's workspace `package.json` version. */
export async function imageVersion(repo: string, spec: ImageSpec): Promise<string> {
  const pkg = JSON.parse(await readFile(join(repo, spec.workspaces[0]!, 'package.json'), 'utf8')) as {
    version?: string;
  };
  if (!pkg.version)
    throw new Error(`${spec.workspaces[0]}/package.json has no version to tag ${spec.name} with`);
  return pkg.version;
}

async function umoci(args: readonly string[]): Promise<void> {
  await execFileP('umoci', args, { maxBuffer: 16 * 1024 * 1024 }).catch(
    (err: { stderr?: string; message: string }) => {
      throw new Error(`umoci ${args[0]} failed: ${err.stderr?.trim() || err.message}`);
    },
  );
}

interface OciIndex {
  readonly manifests: readonly { readonly digest: string; readonly annotations?: Record<string, string> }[];
}
interface OciManifest {
  readonly config: { readonly digest: string };
  readonly layers: readonly { readonly digest: string; readonly size: number }[];
}

/** The manifest tagged `tag` in `layout`, with its digest. */
export async function readManifest(
  layout: string,
  tag: string,
): Promise<{ digest: string; manifest: OciManifest }> {
  const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as OciIndex;
  const entry = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
  if (entry === undefined) throw new Error(`${layout} has no image tagged ${tag}`);
  const [algorithm, hex] = entry.digest.split(':');
  const manifest = JSON.parse(await readFile(join(layout, 'blobs', algorithm!, hex!), 'utf8')) as OciManifest;
  return { digest: entry.digest, manifest };
}

/** Builds `spec` into `outDir/<name>` (an OCI layout tagged with the version). */
export async function buildImage(
  repo: string,
  spec: ImageSpec,
  outDir: string,
  log: Log,
): Promise<BuiltImage> {
  const started = performance.now();
  const tag = await imageVersion(repo, spec);
  const source = await debianSource();
  const layers = [
    { tar: await baseLayer(source, log), createdBy: `mmdebstrap --variant=extract ${source.suite}` },
    ...(spec.extraPackages.length > 0
      ? [
          {
            tar: await extraPackagesLayer(spec.extraPackages, log),
            createdBy: `dpkg-deb -x ${spec.extraPackages.join(' ')}`,
          },
        ]
      : []),
  ];
  await mkdir(outDir, { recursive: true });
  const work = await mkdtemp(join(outDir, `.${spec.name}-`));
  try {
    layers.push(
      { tar: await nodeLayer(repo, work), createdBy: `node ${NODE_PATH}` },
      { tar: await dependenciesLayer(repo, log), createdBy: 'npm ci --omit=dev --ignore-scripts' },
      { tar: await appLayer(repo, spec, work), createdBy: `sources of ${spec.workspaces.join(', ')}` },
    );
    // The same layers, recipe and tag make the same image (the build is reproducible):
    // a layout already built from them is returned instead of compressing them again
    // (the node and dependency layers are most of the time, and they rarely change).
    const dest = join(outDir, spec.name);
    const key = await imageKey(layers, spec, tag);
    if ((await readFile(join(dest, LAYOUT_KEY), 'utf8').catch(() => '')) === key) {
      return built(spec, tag, dest, started);
    }
    await rm(join(dest, LAYOUT_KEY), { force: true });
    const layout = join(work, 'layout');
    const image = `${layout}:${tag}`;
    const created = new Date(sourceDateEpoch() * 1000).toISOString();
    await umoci(['init', '--layout', layout]);
    await umoci(['new', '--image', image]);
    for (const l of layers) {
      await umoci([
        'raw',
        'add-layer',
        '--image',
        image,
        '--history.created',
        created,
        '--history.created_by',
        l.createdBy,
        l.tar,
      ]);
    }
    const env = { ...IMAGE_ENV, ...spec.env };
    await umoci([
      'config',
      '--image',
      image,
      '--no-history',
      '--created',
      created,
      '--os',
      'linux',
      '--architecture',
      process.arch === 'arm64' ? 'arm64' : 'amd64',
      '--config.user',
      `${IMAGE_USER}:${IMAGE_USER}`,
      '--config.workingdir',
      APP_DIR,
      '--config.entrypoint',
      NODE_PATH,
      '--config.entrypoint',
      `${APP_DIR}/${spec.entry}`,
      ...Object.entries(env).flatMap(([k, v]) => ['--config.env', `${k}=${v}`]),
      '--config.label',
      `org.opencontainers.image.title=${spec.name}`,
      '--config.label',
      `org.opencontainers.image.description=${spec.description}`,
      '--config.label',
      `org.opencontainers.image.version=${tag}`,
      '--config.label',
      'org.opencontainers.image.licenses=Apache-2.0',
      '--config.label',
      `org.opencontainers.image.ref.name=${IMAGE_REGISTRY}/${spec.name}:${tag}`,
    ]);
    await umoci(['gc', '--layout', layout]);
    // The complete layout replaces the previous one; until this rename there is only the old.
    const old = `${dest}.old-${process.pid}`;
    await rename(dest, old).catch(() => undefined);
    await mkdir(dirname(dest), { recursive: true });
    await rename(layout, dest);
    await rm(old, { recursive: true, force: true });
    await writeFile(join(dest, LAYOUT_KEY), key);
    return built(spec, tag, dest, started);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * What an image is made of: each layer's content and history, the spec, the tag, the
 * timestamp and this file's own text (the recipe: a change to how images are assembled
 * must not return a layout assembled the old way).
 */
async function imageKey(
  layers: readonly { readonly tar: string; readonly createdBy: string }[],
  spec: ImageSpec,
  tag: string,
): Promise<string> {
  const h = createHash('sha256');
  h.update(await readFile(new URL(import.meta.url)));
  h.update(JSON.stringify({ spec, tag, epoch: sourceDateEpoch(), env: IMAGE_ENV, arch: process.arch }));
  for (const l of layers) {
    const lh = createHash('sha256');
    for await (const chunk of createReadStream(l.tar)) lh.update(chunk as Buffer);
    h.update(`${lh.digest('hex')} ${l.createdBy}\n`);
  }
  return h.digest('hex');
}

/** What a finished (or reused) layout holds, read back from it. */
async function built(spec: ImageSpec, tag: string, layout: string, started: number): Promise<BuiltImage> {
  const { digest, manifest } = await readManifest(layout, tag);
  return {
    name: spec.name,
    tag,
    layout,
    digest,
    layers: manifest.layers.map((l) => ({ digest: l.digest, size: l.size })),
    seconds: (performance.now() - started) / 1000,
  };
}
