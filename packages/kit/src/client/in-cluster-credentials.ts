/**
 * The pod's service account, read natively (client-go's `InClusterConfig`): the server
 * is `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, the CA is the
 * mounted `ca.crt`, and the bearer token is the mounted `token`, re-read at most once a
 * minute: bound service-account tokens are rotated by the kubelet (hourly by default),
 * and client-go re-reads the file as often. No `@kubernetes/client-node` on this path.
 */
import { readFile } from 'node:fs/promises';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import type { Credentials, TlsOptions } from './credentials.ts';

/** Where the kubelet mounts the service account's token, CA and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** How often the token file is re-read (client-go and client-node: one minute). */
export const TOKEN_REFRESH_MS = 60_000;

export interface InClusterOptions {
  /** The directory holding `token` and `ca.crt`; {@link SERVICE_ACCOUNT_DIR} by default. */
  readonly dir?: string;
  /** How often the token file is re-read; {@link TOKEN_REFRESH_MS} by default. */
  readonly tokenRefreshMs?: number;
  /** Where `KUBERNETES_SERVICE_HOST`/`_PORT` are read; `process.env` by default. */
  readonly env?: NodeJS.ProcessEnv;
}

export class InClusterCredentials implements Credentials {
  readonly server: string;
  readonly tls: TlsOptions;
  private readonly tokenFile: string;
  private readonly refreshMs: number;
  private headers: Readonly<Record<string, string>>;
  private readAt: number;
  private reading: Promise<Readonly<Record<string, string>>> | undefined;

  private constructor(server: string, ca: Buffer, tokenFile: string, token: string, refreshMs: number) {
    this.server = server;
    this.tls = { ca, rejectUnauthorized: true };
    this.tokenFile = tokenFile;
    this.refreshMs = refreshMs;
    this.headers = bearer(token);
    this.readAt = Date.now();
  }

  /**
   * Reads the CA and the token once (failing if either is missing, as client-go does);
   * throws when `KUBERNETES_SERVICE_HOST` or `KUBERNETES_SERVICE_PORT` is unset.
   */
  static async load(options: InClusterOptions = {}): Promise<InClusterCredentials> {
    const env = options.env ?? process.env;
    const host = env.KUBERNETES_SERVICE_HOST;
    const port = env.KUBERNETES_SERVICE_PORT;
    if (!host || !port) {
      throw new Error(
        'not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set',
      );
    }
    const dir = options.dir ?? SERVICE_ACCOUNT_DIR;
    const tokenFile = join(dir, 'token');
    const [ca, token] = await Promise.all([readFile(join(dir, 'ca.crt')), readFile(tokenFile, 'utf8')]);
    return new InClusterCredentials(
      `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
      ca,
      tokenFile,
      token.trim(),
      options.tokenRefreshMs ?? TOKEN_REFRESH_MS,
    );
  }

  authHeaders(): Promise<Readonly<Record<string, string>>> {
    if (Date.now() - this.readAt < this.refreshMs) return Promise.resolve(this.headers);
    this.reading ??= readFile(this.tokenFile, 'utf8')
      .then(
        (token) => {
          this.headers = bearer(token.trim());
          return this.headers;
        },
        // A file missing for a moment (being rotated): keep the token we have, as client-go's
        // caching token source does, and try again at the next interval.
        () => this.headers,
      )
      .finally(() => {
        this.readAt = Date.now();
        this.reading = undefined;
      });
    return this.reading;
  }
}

function bearer(token: string): Readonly<Record<string, string>> {
  return token ? { Authorization: `Bearer ${token}` } : {};
}
