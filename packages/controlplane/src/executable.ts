import { access, constants } from 'node:fs/promises';

/**
 * Whether a cached binary can be run as it is: the check every binary group makes
 * before it downloads, builds or compiles one again.
 */
export async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
