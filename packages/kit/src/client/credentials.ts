/**
 * Where a transport connects and who it says it is: the server URL, the TLS options of
 * every connection, and the headers that authenticate each request. Two sources
 * implement it: {@link KubeconfigCredentials} (kubeconfig files and strings, through
 * `@kubernetes/client-node`, imported only then) and {@link InClusterCredentials} (the
 * pod's service-account files, read natively); {@link loadCredentials} picks one.
 */

/** TLS options of every connection to the server. */
export interface TlsOptions {
  readonly ca?: string | Buffer;
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** False only when the configuration says to skip verification (`insecure-skip-tls-verify`). */
  readonly rejectUnauthorized?: boolean;
  readonly servername?: string;
}

export interface Credentials {
  /** The server URL, e.g. `https://10.96.0.1:443`, without a trailing slash. */
  readonly server: string;
  readonly tls: TlsOptions;
  /**
   * The headers that authenticate a request (`Authorization`, …), refreshed by the
   * source as its tokens rotate; cheap to call before every request.
   */
  authHeaders(): Promise<Readonly<Record<string, string>>>;
}
