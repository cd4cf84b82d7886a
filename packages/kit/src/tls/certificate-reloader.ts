/**
 * Keeps a TLS server on the current certificate files: cert-manager renews a webhook's
 * certificate into its Secret (by default when two thirds of its life has passed), the
 * kubelet updates the mounted files, and the server must serve the new pair without a
 * restart, as controller-runtime's `certwatcher` does.
 *
 * Guarantees: the pair is re-read when the directory changes (inotify, through
 * `fs.watch`) and at least every `intervalMs` (default 10 s, controller-runtime's
 * polling period: `fs.watch` misses changes on some volumes, and the kubelet swaps a
 * Secret volume by renaming a symlink). A new pair is applied only if its key matches
 * its certificate (`tls.createSecureContext` checks): a pair caught half-written is
 * skipped and retried at the next check, and the server keeps serving the old pair
 * meanwhile. Unchanged files cause nothing. With a `caFile` (the CA a server verifies
 * its clients' certificates against, controller-runtime's `ClientCAName`) the CA is
 * read, checked and reloaded with the pair, as one unit: a CA that does not parse keeps
 * the previous material in service, as a mismatched pair does.
 */

import { X509Certificate } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';
import { type Clock, realClock, type TimerHandle } from '../base/clock.ts';
import type { PemPair } from './certificates.ts';

/** A serving pair, and the client CA when the reloader reads one (a `tls.SecureContextOptions` as is). */
export interface TlsMaterial extends PemPair {
  /** PEM CA certificate(s) that client certificates must chain to. */
  readonly ca?: string;
}

export interface CertificateReloaderOptions {
  readonly certFile: string;
  readonly keyFile: string;
  /** Also read (and reload) this CA bundle, for verifying client certificates. */
  readonly caFile?: string;
  /** Called with each new valid material (not with the first, which {@link CertificateReloader.load} returns). */
  readonly onChange: (material: TlsMaterial) => void;
  /** How often the files are re-read whatever `fs.watch` says. Default 10 s. */
  readonly intervalMs?: number;
  /** Also react to file-system events at once. Default true. */
  readonly watchFiles?: boolean;
  readonly clock?: Clock;
  readonly log?: Logger;
}

/** The pair `certFile`/`keyFile` holds, checked to match. */
export async function readPair(certFile: string, keyFile: string): Promise<PemPair> {
  const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  // Throws on unparsable PEM and on a key that does not belong to the certificate.
  createSecureContext({ cert, key });
  return { cert, key };
}

/**
 * The pair and, with `caFile`, the CA bundle, each checked.
 *
 * @throws Error when a file is missing, the pair does not match, or the CA file holds
 *   no certificate (an empty or half-written file would otherwise refuse every client).
 */
export async function readTlsMaterial(
  certFile: string,
  keyFile: string,
  caFile?: string,
): Promise<TlsMaterial> {
  const [pair, ca] = await Promise.all([
    readPair(certFile, keyFile),
    caFile === undefined ? undefined : readFile(caFile, 'utf8'),
  ]);
  if (ca === undefined) return pair;
  checkCa(ca, caFile ?? '');
  return { ...pair, ca };
}

/** Throws unless `pem` holds at least one parsable certificate. */
export function checkCa(pem: string, where: string): void {
  try {
    // Parses the first certificate of the bundle: enough to tell a CA from an empty or torn file.
    new X509Certificate(pem);
  } catch (err) {
    throw new Error(`${where} holds no PEM certificate: ${(err as Error).message}`, { cause: err });
  }
}

export class CertificateReloader {
  private readonly opts: CertificateReloaderOptions;
  private readonly clock: Clock;
  private current: TlsMaterial | undefined;
  private timer: TimerHandle | undefined;
  private watchers: FSWatcher[] = [];
  private checking: Promise<boolean> | undefined;
  private again = false;
  private stopped = false;

  constructor(opts: CertificateReloaderOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
  }

  /**
   * Reads the first pair and starts watching.
   *
   * @throws Error when the files are missing or do not match: a server must not start
   *   without a certificate.
   */
  async load(): Promise<TlsMaterial> {
    const material = await readTlsMaterial(this.opts.certFile, this.opts.keyFile, this.opts.caFile);
    this.current = material;
    this.stopped = false;
    if (this.opts.watchFiles !== false) {
      // The directories, not the files: a rename replaces the file a watch would hold.
      const dirs = new Set(
        [this.opts.certFile, this.opts.keyFile, this.opts.caFile].flatMap((f) => (f ? [dirname(f)] : [])),
      );
      for (const dir of dirs) {
        try {
          const watcher = watch(dir, () => void this.check());
          watcher.on('error', () => watcher.close());
          watcher.unref();
          this.watchers.push(watcher);
        } catch {
          // No inotify here (or too many watches): polling alone keeps it current.
        }
      }
    }
    this.schedule();
    return material;
  }

  /**
   * Re-reads the files now; resolves true when a new valid pair was applied. Checks do
   * not overlap: one asked for during another runs once after it.
   */
  check(): Promise<boolean> {
    if (this.checking) {
      this.again = true;
      return this.checking;
    }
    this.checking = (async () => {
      let changed = false;
      do {
        this.again = false;
        changed = (await this.checkOnce()) || changed;
      } while (this.again && !this.stopped);
      this.checking = undefined;
      return changed;
    })();
    return this.checking;
  }

  private async checkOnce(): Promise<boolean> {
    if (this.stopped) return false;
    let material: TlsMaterial;
    try {
      material = await readTlsMaterial(this.opts.certFile, this.opts.keyFile, this.opts.caFile);
    } catch (err) {
      this.opts.log?.warn(
        { err, certFile: this.opts.certFile, caFile: this.opts.caFile },
        'webhook certificate files unreadable or mismatched; still serving the previous certificate',
      );
      return false;
    }
    const current = this.current;
    if (
      this.stopped ||
      (material.cert === current?.cert && material.key === current.key && material.ca === current.ca)
    )
      return false;
    this.current = material;
    this.opts.onChange(material);
    this.opts.log?.info({ certFile: this.opts.certFile }, 'webhook certificate reloaded');
    return true;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => {
      void this.check().finally(() => this.schedule());
    }, this.opts.intervalMs ?? 10_000);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    for (const watcher of this.watchers.splice(0)) watcher.close();
  }
}
