/**
 * Copies a built image's OCI layout to a registry with skopeo. The registry is named as
 * `host[:port][/path]`; the image goes to `<registry>/<name>:<tag>`. A registry on
 * localhost or 127.0.0.1 is spoken to over plain HTTP (a local test registry); any other
 * over TLS, with the credentials `skopeo login` stored.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { BuiltImage } from './build.ts';

const execFileP = promisify(execFile);

/** Whether `registry` is this machine's, spoken to without TLS. */
export function isLocalRegistry(registry: string): boolean {
  return /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?(\/|$)/.test(registry);
}

/** The reference an image is pushed to. */
export function pushReference(registry: string, image: Pick<BuiltImage, 'name' | 'tag'>): string {
  return `${registry.replace(/\/+$/, '')}/${image.name}:${image.tag}`;
}

/** Pushes `image` to `registry`; an error saying what skopeo said and what to check. */
export async function pushImage(
  image: BuiltImage,
  registry: string,
  timeoutMs = 10 * 60_000,
): Promise<string> {
  const ref = pushReference(registry, image);
  try {
    await execFileP(
      'skopeo',
      [
        'copy',
        '--retry-times',
        '0',
        ...(isLocalRegistry(registry) ? ['--dest-tls-verify=false'] : []),
        `oci:${image.layout}:${image.tag}`,
        `docker://${ref}`,
      ],
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
    );
  } catch (err) {
    const e = err as { stderr?: string; message: string; killed?: boolean };
    const said = e.killed ? `no answer within ${timeoutMs / 1000} s` : e.stderr?.trim() || e.message;
    throw new Error(
      `pushing ${image.name} to ${ref} failed: ${said}\n` +
        '  is the registry reachable from here, and are you logged in to it (skopeo login)?',
    );
  }
  return ref;
}
