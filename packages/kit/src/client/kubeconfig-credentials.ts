/**
 * Credentials from a kubeconfig, through `@kubernetes/client-node`'s KubeConfig: exec
 * and auth-provider plugins, token files, client certificates, `insecure-skip-tls-verify`.
 * client-node (~90 MB of generated API once loaded) is imported here only, and only when
 * a kubeconfig is actually read: a pod on its service account never loads it.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Credentials, TlsOptions } from './credentials.ts';

/** Auth headers from tokens or exec plugins are re-read this often, so rotated tokens are picked up. */
export const AUTH_TTL_MS = 60_000;

type HttpsOptions = Parameters<KubeConfig['applyToHTTPSOptions']>[0];

export class KubeconfigCredentials implements Credentials {
  readonly server: string;
  readonly tls: TlsOptions;
  private readonly kubeConfig: KubeConfig;
  /** Whether the headers come from something that expires: a token, plugin or password. */
  private readonly dynamicAuth: boolean;
  private headers: Readonly<Record<string, string>> = {};
  private authAt = 0;

  private constructor(kc: KubeConfig, server: string, tls: TlsOptions) {
    this.kubeConfig = kc;
    this.server = server;
    this.tls = tls;
    const user = kc.getCurrentUser();
    this.dynamicAuth = !!user && (!!user.token || !!user.authProvider || !!user.exec || !!user.password);
  }

  /** From a loaded KubeConfig (its current context). */
  static async fromKubeConfig(kc: KubeConfig): Promise<KubeconfigCredentials> {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster; set a current-context');
    const opts: {
      ca?: Buffer;
      cert?: Buffer;
      key?: Buffer;
      rejectUnauthorized?: boolean;
      servername?: string;
      headers?: Record<string, string>;
    } = {};
    await kc.applyToHTTPSOptions(opts as HttpsOptions);
    return new KubeconfigCredentials(kc, cluster.server, {
      ca: opts.ca,
      cert: opts.cert,
      key: opts.key,
      rejectUnauthorized: opts.rejectUnauthorized ?? !cluster.skipTLSVerify,
      servername: opts.servername,
    });
  }

  /** From a kubeconfig file (its current context). */
  static async fromFile(path: string): Promise<KubeconfigCredentials> {
    const kc = await newKubeConfig();
    kc.loadFromFile(path);
    return KubeconfigCredentials.fromKubeConfig(kc);
  }

  /** From the text of a kubeconfig (its current context). */
  static async fromString(text: string): Promise<KubeconfigCredentials> {
    const kc = await newKubeConfig();
    kc.loadFromString(text);
    return KubeconfigCredentials.fromKubeConfig(kc);
  }

  /**
   * client-node's `loadFromDefault`: `$KUBECONFIG`, `~/.kube/config`, the service
   * account at its standard path, else `http://localhost:8080`.
   */
  static async fromDefault(): Promise<KubeconfigCredentials> {
    const kc = await newKubeConfig();
    kc.loadFromDefault();
    return KubeconfigCredentials.fromKubeConfig(kc);
  }

  async authHeaders(): Promise<Readonly<Record<string, string>>> {
    if (this.dynamicAuth && Date.now() - this.authAt > AUTH_TTL_MS) {
      const o: { headers?: Record<string, string> } = { headers: {} };
      await this.kubeConfig.applyToHTTPSOptions(o as HttpsOptions);
      const headers = { ...(o.headers ?? {}) };
      // The kubeconfig's `as:` is not ours to apply: impersonation is the transport's.
      delete headers['Impersonate-User'];
      this.headers = headers;
      this.authAt = Date.now();
    }
    return this.headers;
  }
}

async function newKubeConfig(): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  return new KubeConfig();
}
