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
 * meanwhile. Unchanged files cause nothing.
 */
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';
import { type Clock, realClock, type TimerHandle } from '../base/clock.ts';
import type { PemPair } from './certificates.ts';

export interface CertificateReloaderOptions {
  readonly certFile: string;
  readonly keyFile: string;
  /** Called with each new valid pair (not with the first one, which {@link CertificateReloader.load} returns). */
  readonly onChange: (pair: PemPair) => void;
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

export class CertificateReloader {
  private readonly opts: CertificateReloaderOptions;
  private readonly clock: Clock;
  private current: PemPair | undefined;
  private timer: TimerHandle | undefined;
  private watcher: FSWatcher | undefined;
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
  async load(): Promise<PemPair> {
    const pair = await readPair(this.opts.certFile, this.opts.keyFile);
    this.current = pair;
    this.stopped = false;
    if (this.opts.watchFiles !== false) {
      try {
        // The directory, not the files: a rename replaces the file the watch would hold.
        this.watcher = watch(dirname(this.opts.certFile), () => void this.check());
        this.watcher.on('error', () => this.watcher?.close());
        this.watcher.unref();
      } catch {
        // No inotify here (or too many watches): polling alone keeps it current.
      }
    }
    this.schedule();
    return pair;
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
    let pair: PemPair;
    try {
      pair = await readPair(this.opts.certFile, this.opts.keyFile);
    } catch (err) {
      this.opts.log?.warn(
        { err, certFile: this.opts.certFile },
        'webhook certificate files unreadable or mismatched; still serving the previous certificate',
      );
      return false;
    }
    if (this.stopped || (pair.cert === this.current?.cert && pair.key === this.current?.key)) return false;
    this.current = pair;
    this.opts.onChange(pair);
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
    this.watcher?.close();
    this.watcher = undefined;
  }
}
