/**
 * Which credentials a client without an explicit kubeconfig uses, in client-node's
 * `loadFromDefault` order (client-go's is the same): a given kubeconfig path, then
 * `$KUBECONFIG`, then `~/.kube/config`, then the pod's service account. Only the last,
 * with `KUBERNETES_SERVICE_HOST`/`_PORT` set and the token mounted, is served natively
 * ({@link InClusterCredentials}); everything else, including client-node's own
 * fallbacks (Windows' WSL lookup, `http://localhost:8080`), goes through client-node as
 * before.
 */
import { accessSync } from 'node:fs';
import { join } from 'node:path';
import type { Credentials } from './credentials.ts';
import {
  InClusterCredentials,
  type InClusterOptions,
  SERVICE_ACCOUNT_DIR,
} from './in-cluster-credentials.ts';
import { KubeconfigCredentials } from './kubeconfig-credentials.ts';

/**
 * Credentials from `kubeconfigPath` when given, else the default sources (see the
 * module comment). `inCluster` overrides where the service account is read from (tests).
 */
export async function loadCredentials(
  kubeconfigPath?: string,
  inCluster: InClusterOptions = {},
): Promise<Credentials> {
  if (kubeconfigPath) return KubeconfigCredentials.fromFile(kubeconfigPath);
  if (inClusterApplies(inCluster)) return InClusterCredentials.load(inCluster);
  return KubeconfigCredentials.fromDefault();
}

/**
 * Whether client-node's `loadFromDefault` would reach its in-cluster step (no
 * `$KUBECONFIG`, no `~/.kube/config`, the token file present; on Windows it would try
 * WSL first, so never) and the service's address is known.
 */
function inClusterApplies(options: InClusterOptions): boolean {
  const env = options.env ?? process.env;
  if (process.platform === 'win32') return false;
  if (env.KUBECONFIG) return false;
  // client-node's findHomeDir: $HOME when it is accessible.
  if (env.HOME && exists(env.HOME) && exists(join(env.HOME, '.kube', 'config'))) return false;
  if (!exists(join(options.dir ?? SERVICE_ACCOUNT_DIR, 'token'))) return false;
  return !!env.KUBERNETES_SERVICE_HOST && !!env.KUBERNETES_SERVICE_PORT;
}

function exists(path: string): boolean {
  try {
    accessSync(path);
    return true;
  } catch {
    return false;
  }
}
