/**
 * Downloads a release file, checks it against the sha256 it should have, and leaves the
 * binary it holds in a folder: the fast path to the control-plane binaries (seconds,
 * where a build from source takes minutes).
 *
 * The sha256 comes from the plan's {@link Trust}: a pin from versions.ts, or the
 * release's own published checksum file, fetched here from the same host (or mirror)
 * before the file itself and parsed strictly (releases.ts `parseChecksumFile`).
 *
 * Two kinds of failure, because they call for different answers:
 *  - {@link DownloadUnavailable}: the host could not be reached, did not answer within
 *    the connect timeout, went silent mid-body, answered with an HTTP error, or closed
 *    the connection before the end; or the published checksum file is missing or
 *    malformed. Nothing was learned about the file; `auto` mode builds from source instead.
 *  - {@link DownloadRejected}: a complete file arrived and it is not the one its pin or
 *    its published checksum names (or not the archive it should be), or the pin and the
 *    published checksum disagree. That is a wrong mirror, a tampered file or a wrong
 *    pin: an error in every mode, never papered over by a build.
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
import { type PublishedChecksum, parseChecksumFile, type Trust } from './releases.ts';

const exec = promisify(execFile);

/** One file of an official release, and where its binary is once fetched. */
export interface ReleaseFile {
  /** The binary's name in the cache folder (`kube-apiserver`, `etcd`). */
  readonly binary: string;
  readonly url: string;
  /** Where the sha256 of the file at `url` comes from. */
  readonly trust: Trust;
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

/** The file arrived complete and is not the one its checksum names, or its checksums disagree. */
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
    const expected = await expectedSha256(file, opts);
    await fetchVerified(file, expected, partial, opts);
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

/**
 * A 2xx response for `url`, or {@link DownloadUnavailable} saying why there is none, in
 * the words of `failed` (a release file's by default).
 */
async function openOk(
  url: string,
  connectTimeoutMs: number,
  failed: (why: string) => DownloadUnavailable = (why) => unavailable(url, why),
): Promise<IncomingMessage> {
  let response: IncomingMessage;
  try {
    response = await openResponse(url, connectTimeoutMs);
  } catch (err) {
    throw failed(describeNetworkError(err));
  }
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.resume();
    throw failed(`the server answered HTTP ${status} ${response.statusMessage ?? ''}`.trim());
  }
  return response;
}

/** The sha256 a download must have, and the words the log and the errors use for its source. */
interface Expected {
  readonly sha256: string;
  /** For the log line: "sha256 pinned" or "sha256 from the release's published checksum file (<url>)". */
  readonly source: string;
  /** For a mismatch: "the pinned sha256 <hex>" or "the sha256 <hex> published in <url>". */
  readonly named: string;
}

/** The largest checksum file read: etcd's SHA256SUMS, the longest here, is under 2 kB. */
const MAX_CHECKSUM_FILE_BYTES = 1_000_000;

/**
 * The text of a published checksum file, or {@link DownloadUnavailable} saying why there
 * is none (unreachable, an HTTP error such as a 404, silent, too large).
 */
async function readChecksumFile(url: string, opts: DownloadOptions): Promise<string> {
  const response = await openOk(url, opts.connectTimeoutMs, (why) => checksumUnavailable(url, why));
  const chunks: Buffer[] = [];
  let bytes = 0;
  const stall = setTimeout(
    () => response.destroy(new Error(`no data for ${opts.stallTimeoutMs} ms`)),
    opts.stallTimeoutMs,
  );
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      bytes += chunk.byteLength;
      if (bytes > MAX_CHECKSUM_FILE_BYTES) {
        response.destroy();
        throw checksumUnavailable(url, `it is larger than ${MAX_CHECKSUM_FILE_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof DownloadUnavailable) throw err;
    throw checksumUnavailable(url, describeNetworkError(err));
  } finally {
    clearTimeout(stall);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A published checksum file that cannot be used: as unavailable as the file itself. */
function checksumUnavailable(url: string, why: string): DownloadUnavailable {
  return new DownloadUnavailable(
    `the release's published checksum file ${url} cannot be used: ${why}.`,
    "check the mirror serves the release's checksum files beside its files, pin the sha256 in " +
      'packages/controlplane/src/versions.ts, or build from source with KUBE_OPERATORS_BINARIES=build.',
  );
}

/** The digest a published checksum file gives our file, or {@link DownloadUnavailable}. */
async function publishedSha256(published: PublishedChecksum, opts: DownloadOptions): Promise<string> {
  const text = await readChecksumFile(published.checksumUrl, opts);
  const reading = parseChecksumFile(text, published.format, published.fileName);
  switch (reading.kind) {
    case 'digest':
      return reading.sha256;
    case 'malformed':
      throw checksumUnavailable(published.checksumUrl, `it is malformed, ${reading.why}`);
  }
}

/**
 * What the file must hash to. A pin wins; where the plan asks for a cross-check the
 * release's published file is read too, and a disagreement refuses the download before
 * a byte of it is fetched (one of the two is wrong, and nothing here can say which). A
 * published file that cannot be read leaves the pin alone, saying so.
 */
async function expectedSha256(file: ReleaseFile, opts: DownloadOptions): Promise<Expected> {
  const trust = file.trust;
  switch (trust.kind) {
    case 'pinned': {
      const pinned = trust.sha256.toLowerCase();
      if (trust.crossCheck !== undefined) {
        let published: string | undefined;
        try {
          published = await publishedSha256(trust.crossCheck, opts);
        } catch (err) {
          if (!(err instanceof DownloadUnavailable)) throw err;
          opts.log(`${file.binary}: the pin alone, ${err.message.split('\n')[0]}`);
        }
        if (published !== undefined && published !== pinned) {
          throw new DownloadRejected(
            `${file.url}: the sha256 pinned in versions.ts is ${pinned}, and the release's published ` +
              `checksum file ${trust.crossCheck.checksumUrl} says ${published}. Nothing was downloaded or installed.`,
            'one of the two is wrong: compare the pin with the release notes and fix versions.ts, or point the ' +
              'mirror at the official files; or build from source with KUBE_OPERATORS_BINARIES=build.',
          );
        }
      }
      return { sha256: pinned, source: 'sha256 pinned', named: `the pinned sha256 ${pinned}` };
    }
    case 'published': {
      const sha256 = await publishedSha256(trust, opts);
      return {
        sha256,
        source: `sha256 from the release's published checksum file (${trust.checksumUrl})`,
        named: `the sha256 ${sha256} published in ${trust.checksumUrl}`,
      };
    }
  }
}

async function fetchVerified(
  file: ReleaseFile,
  expected: Expected,
  path: string,
  opts: DownloadOptions,
): Promise<void> {
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
  if (got !== expected.sha256) {
    throw new DownloadRejected(
      `${file.url} has sha256 ${got}, not ${expected.named} (${received} bytes).`,
      'a mirror serving other files, or a file altered in transit or at rest: nothing was installed. ' +
        'Point the mirror at the official files, or build from source with KUBE_OPERATORS_BINARIES=build.',
    );
  }
  const seconds = (Date.now() - started) / 1000;
  opts.log(
    `downloaded ${file.binary}: ${megabytes(received)} in ${seconds.toFixed(1)} s ` +
      `(${megabytes(received / Math.max(seconds, 0.001))}/s), verified: ${expected.source}`,
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
