/**
 * The OPA bundle as bytes: a gzipped tar holding `data.json` and `.manifest`.
 *
 * The tar writer is ours, not a library's: two regular files in the POSIX ustar
 * format need one 512-byte header each, the content padded to 512 bytes and two
 * zero blocks at the end; that is shorter than the glue to a streaming library. The
 * bytes depend on the content alone: mtime 0, mode 0644, uid and gid 0, no user or
 * group names, fixed order, and Node's gzip writes mtime 0 in its header. So equal
 * models give equal bundles (the ETag is the revision, not a hash of these bytes,
 * so a different zlib would not change it).
 */
import { gzipSync } from 'node:zlib';
import { canonicalJson } from './canonical-json.ts';

export interface BundleFile {
  /** A relative path of at most 100 bytes (no prefix field needed). */
  readonly name: string;
  readonly content: string | Uint8Array;
}

const BLOCK = 512;

/** `{"revision":...,"roots":[...]}`, canonical. */
export function manifestJson(revision: string, roots: readonly string[]): string {
  return canonicalJson({ revision, roots: [...roots] });
}

/** The bundle: `data.json` (the text given, written as is) and `.manifest`, gzipped. */
export function buildBundle(dataJson: string, revision: string, roots: readonly string[]): Buffer {
  return gzipSync(
    tar([
      { name: 'data.json', content: dataJson },
      { name: '.manifest', content: manifestJson(revision, roots) },
    ]),
  );
}

/** An uncompressed ustar archive of regular files, in the order given. */
export function tar(files: readonly BundleFile[]): Buffer {
  const parts: Buffer[] = [];
  for (const f of files) {
    const body = typeof f.content === 'string' ? Buffer.from(f.content, 'utf8') : Buffer.from(f.content);
    parts.push(header(f.name, body.length), body, Buffer.alloc(padding(body.length)));
  }
  // End of archive: two zero blocks.
  parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}

function padding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

/** One ustar header block (POSIX.1-1988 field layout). Numbers are octal, NUL-terminated. */
function header(name: string, size: number): Buffer {
  const h = Buffer.alloc(BLOCK); // every field not written stays NUL: uname, gname, linkname, prefix
  const nameBytes = Buffer.from(name, 'utf8');
  if (nameBytes.length > 100) throw new Error(`tar entry name ${name} is longer than 100 bytes`);
  nameBytes.copy(h, 0); // name[100] at 0
  octal(h, 100, 8, 0o644); // mode
  octal(h, 108, 8, 0); // uid
  octal(h, 116, 8, 0); // gid
  octal(h, 124, 12, size); // size (11 octal digits: up to 8 GiB)
  octal(h, 136, 12, 0); // mtime
  h.fill(0x20, 148, 156); // chksum is summed as eight spaces
  h.write('0', 156, 'latin1'); // typeflag: regular file
  h.write('ustar\u000000', 257, 'latin1'); // magic "ustar\0" then version "00"
  let sum = 0;
  for (const b of h) sum += b;
  // Six octal digits, NUL, space: the form tar itself writes.
  h.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
  return h;
}

/** Writes `value` in octal, zero-padded to `width - 1` digits and NUL-terminated. */
function octal(h: Buffer, offset: number, width: number, value: number): void {
  const digits = value.toString(8);
  if (digits.length > width - 1) throw new Error(`${value} does not fit a ${width}-byte tar field`);
  h.write(`${digits.padStart(width - 1, '0')}\u0000`, offset, 'latin1');
}
