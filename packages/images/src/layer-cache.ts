/**
 * The build cache of layers that do not change with the sources (the base, extra
 * packages, the production dependencies): each is a tar named by its recipe's key,
 * built once under a lock that another build process waits on, in a temporary folder
 * renamed into place when complete. A killed build leaves a temporary folder, never a
 * tar that a later build would take for a whole one.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheRoot, withLock } from '@operators/controlplane';

export type Log = (message: string) => void;

/** The folder of cached layers. */
export function imageCache(): string {
  return join(cacheRoot(), 'images');
}

/** A short key for a recipe: what goes into a layer, as JSON or as bytes already hashed. */
export function recipeKey(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * The tar `<name>.tar` in the cache, built by `build` when absent. `build` gets an empty
 * work folder, removed afterwards, and writes the layer's tar at the path it is given.
 */
export async function cachedLayer(
  name: string,
  log: Log,
  build: (work: string, tar: string) => Promise<void>,
): Promise<string> {
  const out = join(imageCache(), `${name}.tar`);
  if (await exists(out)) return out;
  await mkdir(imageCache(), { recursive: true });
  return withLock(`${out}.lock`, log, async () => {
    if (await exists(out)) return out;
    const work = await mkdtemp(join(imageCache(), `${name}-`));
    try {
      const tmp = join(work, 'layer.tar');
      await build(work, tmp);
      await rename(tmp, out);
      return out;
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
}
