/**
 * Downloads a release file, checks it against a pinned sha256, and leaves the binary it
 * holds in a folder: the fast path to the control-plane binaries (seconds, where a build
 * from source takes minutes).
 *
 * Two kinds of failure, because they call for different answers:
 *  - {@link DownloadUnavailable}: the host could not be reached, did not answer within
 *    the connect timeout, went silent mid-body, answered with an HTTP error, or closed
 *    the connection before the end. Nothing was learned about the file; `auto` mode
 *    builds from source instead.
 *  - {@link DownloadRejected}: a complete file arrived and it is not the pinned one (or
 *    not the archive it should be). That is a wrong mirror or a tampered file: an error
 *    in every mode, never papered over by a build.
 *
 * Everything is written under the caller's work folder first; the caller renames the
 * finished binaries into the cache, so a failure leaves nothing that looks installed.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, mkdir, rename, rm } from 'node:fs/promises';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ControlPlaneError } from './errors.ts';

const exec = promisify(execFile);

/** One file of an official release, and where its binary is once fetched. */
export interface ReleaseFile {
  /** The binary's name in the cache folder (`kube-apiserver`, `etcd`). */
  readonly binary: string;
  readonly url: string;
  /** The pinned sha256 of the file at `url`, lowercase hex. */
  readonly sha256: string;
  /** The binary's path inside a `.tar.gz`; absent when the file is the binary itself. */
  readonly member?: string;
}

export interface DownloadOptions {
  /** How long to wait for the response's headers (connect, TLS, first byte). */
  readonly connectTimeoutMs: number;
  /** How long the body may go without a byte before the download is abandoned. */
  readonly stallTimeoutMs: number;
  /** Receives a progress line every few seconds and one at the end. */
  readonly log: (message: string) => void;
  /** How often progress is reported. */
  readonly progressEveryMs?: number;
}

/** The host did not deliver the file: reachable again later, or from a mirror. */
export class DownloadUnavailable extends ControlPlaneError {}

/** The file arrived complete and is not the pinned one. */
export class DownloadRejected extends ControlPlaneError {}

/** `ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:9)`: the code first, for the reader and for tests. */
function describeNetworkError(err: unknown): string {
  const e = err as { message?: string; code?: string };
  if (e.code) return `${e.code}${e.message ? ` (${e.message})` : ''}`;
  return e.message ?? String(err);
}

function megabytes(n: number): string {
  return `${(n / 1e6).toFixed(1)} MB`;
}

/**
 * Fetches `file` into `workDir`, verifies it, and leaves the binary at
 * `workDir/<file.binary>`, executable. Throws {@link DownloadUnavailable} or
 * {@link DownloadRejected}; removes its partial files either way.
 */
export async function downloadRelease(
  file: ReleaseFile,
  workDir: string,
  opts: DownloadOptions,
): Promise<void> {
  await mkdir(workDir, { recursive: true });
  const partial = join(workDir, `.${file.binary}.download`);
  try {
    await fetchVerified(file, partial, opts);
    const target = join(workDir, file.binary);
    if (file.member === undefined) {
      await rename(partial, target);
    } else {
      await extractMember(file, partial, workDir, target);
    }
    await chmod(target, 0o755);
  } finally {
    await rm(partial, { force: true });
  }
}

/** How many redirects a release host may send (GitHub's release links redirect once). */
const MAX_REDIRECTS = 5;

/**
 * Opens `url` with node:http(s), following redirects, and resolves with the response
 * once its headers arrive. Not `fetch`: undici (Node 24.21) throws an uncaught internal
 * assertion (`assert(!this.paused)`, in `Parser.finish`) when a server closes the
 * connection at the end of a body the reader has paused, which HTTP/1.0 servers and
 * simple mirrors do; that crashed the whole process in this project's bench.
 */
function openResponse(
  url: string,
  connectTimeoutMs: number,
  redirectsLeft = MAX_REDIRECTS,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const get = target.protocol === 'https:' ? httpsGet : httpGet;
    const req = get(target, { headers: { 'user-agent': 'kube-operators-ts-controlplane' } });
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer within ${connectTimeoutMs} ms`)),
      connectTimeoutMs,
    );
    req.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.once('response', (res) => {
      clearTimeout(timer);
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (status >= 300 && status < 400 && location) {
        res.resume();
        if (redirectsLeft === 0) {
          reject(new Error(`more than ${MAX_REDIRECTS} redirects`));
          return;
        }
        openResponse(new URL(location, target).href, connectTimeoutMs, redirectsLeft - 1).then(
          resolve,
          reject,
        );
        return;
      }
      resolve(res);
    });
  });
}

/** The network's failures, in the words both the installer and `checksums` report. */
function unavailable(url: string, why: string): DownloadUnavailable {
  return new DownloadUnavailable(
    `downloading ${url}: ${why}.`,
    'check the network or the mirror set for it, or build from source with KUBE_OPERATORS_BINARIES=build.',
  );
}

/** A 2xx response for `url`, or {@link DownloadUnavailable} saying why there is none. */
async function openOk(url: string, connectTimeoutMs: number): Promise<IncomingMessage> {
  let response: IncomingMessage;
  try {
    response = await openResponse(url, connectTimeoutMs);
  } catch (err) {
    throw unavailable(url, describeNetworkError(err));
  }
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.resume();
    throw unavailable(url, `the server answered HTTP ${status} ${response.statusMessage ?? ''}`.trim());
  }
  return response;
}

async function fetchVerified(file: ReleaseFile, path: string, opts: DownloadOptions): Promise<void> {
  const response = await openOk(file.url, opts.connectTimeoutMs);
  const total = Number(response.headers['content-length'] ?? Number.NaN);
  const hash = createHash('sha256');
  const out = createWriteStream(path);
  // A full disk or a read-only cache: reported below as what it is, not as a crash.
  let writeError: Error | undefined;
  out.on('error', (err) => {
    writeError = err;
  });
  const started = Date.now();
  let received = 0;
  const stalled = (): void => {
    response.destroy(new Error(`no data for ${opts.stallTimeoutMs} ms`));
  };
  let stall = setTimeout(stalled, opts.stallTimeoutMs);
  const progress = setInterval(() => {
    const seconds = (Date.now() - started) / 1000;
    opts.log(
      `downloading ${file.binary}: ${megabytes(received)}${Number.isFinite(total) ? ` of ${megabytes(total)}` : ''}, ` +
        `${megabytes(received / Math.max(seconds, 0.001))}/s`,
    );
  }, opts.progressEveryMs ?? 5_000);
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      clearTimeout(stall);
      stall = setTimeout(stalled, opts.stallTimeoutMs);
      received += chunk.byteLength;
      hash.update(chunk);
      if (writeError) break;
      if (!out.write(chunk)) {
        await new Promise<void>((resolve) => {
          const done = (): void => {
            out.off('drain', done);
            out.off('error', done);
            resolve();
          };
          out.on('drain', done);
          out.on('error', done);
        });
      }
    }
  } catch (err) {
    throw unavailable(
      file.url,
      `${describeNetworkError(err)} after ${megabytes(received)}` +
        `${Number.isFinite(total) ? ` of ${megabytes(total)}` : ''}`,
    );
  } finally {
    clearTimeout(stall);
    clearInterval(progress);
    await new Promise<void>((resolve) => (writeError ? resolve() : out.end(resolve)));
  }
  if (writeError) {
    throw new ControlPlaneError(
      `writing ${path}: ${writeError.message}.`,
      'free space in the cache, or point KUBE_OPERATORS_CACHE at a writable folder.',
    );
  }
  if (Number.isFinite(total) && received !== total) {
    throw unavailable(file.url, `the connection closed after ${received} of ${total} bytes`);
  }
  const got = hash.digest('hex');
  if (got !== file.sha256.toLowerCase()) {
    throw new DownloadRejected(
      `${file.url} has sha256 ${got}, not the pinned ${file.sha256} (${received} bytes).`,
      'a mirror serving other files, or a file altered in transit or at rest: nothing was installed. ' +
        'Point the mirror at the official files, or build from source with KUBE_OPERATORS_BINARIES=build.',
    );
  }
  const seconds = (Date.now() - started) / 1000;
  opts.log(
    `downloaded ${file.binary}: ${megabytes(received)} in ${seconds.toFixed(1)} s ` +
      `(${megabytes(received / Math.max(seconds, 0.001))}/s), sha256 verified`,
  );
}

/** Takes one member out of a verified `.tar.gz` with the system's tar (in every Debian and macOS). */
async function extractMember(
  file: ReleaseFile,
  archive: string,
  workDir: string,
  target: string,
): Promise<void> {
  const member = file.member as string;
  const into = join(workDir, `.${file.binary}.extract`);
  await rm(into, { recursive: true, force: true });
  await mkdir(into, { recursive: true });
  try {
    await exec('tar', ['-xzf', archive, '-C', into, member]);
  } catch (err) {
    throw new DownloadRejected(
      `${file.url} matches its checksum but tar could not take ${member} out of it: ` +
        `${((err as { stderr?: string }).stderr ?? String(err)).trim()}.`,
      'the pinned archive layout is wrong for this version; fix the member path in packages/controlplane/src/releases.ts.',
    );
  }
  try {
    await rename(join(into, member), target);
  } finally {
    await rm(into, { recursive: true, force: true });
  }
}

/**
 * The sha256 of the file at `url`, streamed and never written: what a maintainer pins in
 * versions.ts after comparing it with the release's published checksums.
 */
export async function sha256OfUrl(
  url: string,
  timeoutMs: number,
): Promise<{ sha256: string; bytes: number }> {
  const response = await openOk(url, timeoutMs);
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    hash.update(chunk);
    bytes += chunk.byteLength;
  }
  return { sha256: hash.digest('hex'), bytes };
}
