/**
 * The canonical text of prefixes: always with the prefix length (`1.2.3.4/32`, never a
 * bare address, so that every line reads the same way), IPv6 as RFC 5952 writes it. The
 * canonical text of a list is one prefix per line, each ended by `\n`, in list order:
 * it is what the CLI prints, what `fingerprint` hashes and what the shards hold.
 */
import { formatIpv4, IPV4_WRITE_SLACK, MAX_IPV4_LINE, writeIpv4Prefix } from './ipv4.ts';
import { formatIpv6, formatIpv6Words, MAX_IPV6_LINE, writeIpv6Prefix } from './ipv6.ts';
import { type Prefix, type PrefixList, prefixCount } from './prefix-list.ts';

export function formatPrefix(prefix: Prefix): string {
  switch (prefix.family) {
    case 'ipv4':
      return `${formatIpv4(prefix.address)}/${prefix.length}`;
    case 'ipv6':
      return `${formatIpv6(prefix.address)}/${prefix.length}`;
    default:
      return prefix satisfies never;
  }
}

/** Every prefix of the list as canonical text, in list order. */
export function canonicalStrings(list: PrefixList): string[] {
  const out: string[] = [];
  const { ipv4, ipv6 } = list;
  for (let i = 0; i < ipv4.addresses.length; i++)
    out.push(`${formatIpv4(ipv4.addresses[i]!)}/${ipv4.lengths[i]}`);
  for (let i = 0; i < ipv6.lengths.length; i++)
    out.push(`${formatIpv6Words(ipv6.words, 4 * i)}/${ipv6.lengths[i]}`);
  return out;
}

const LF = 0x0a;

/**
 * The canonical text of the list as UTF-8 bytes (ASCII, in fact), written byte by byte
 * into one buffer: a million prefixes make a million strings otherwise.
 */
export function canonicalText(list: PrefixList): Buffer {
  const { ipv4, ipv6 } = list;
  const out = Buffer.allocUnsafe(
    ipv4.addresses.length * MAX_IPV4_LINE + ipv6.lengths.length * MAX_IPV6_LINE + IPV4_WRITE_SLACK,
  );
  const end = writeLines(list, out, 0, 0);
  return out.subarray(0, end.pos);
}

/** Bytes per piece of `canonicalTextPieces`: large enough that a write or a hash update per piece costs nothing. */
export const PIECE_BYTES = 1 << 20;

/**
 * The canonical text of the list in pieces of about `PIECE_BYTES`, for a writer that
 * sends them on (the CLI: to standard output and the hash) rather than holding the
 * whole text. Every piece is a view of the same buffer, overwritten by the next one:
 * use it before asking for the next. Why: fresh memory costs a page fault per 4 KiB on
 * first touch, and the text of 1.8 million prefixes is 25 MB of it; one reused buffer
 * stays in cache.
 */
export function* canonicalTextPieces(list: PrefixList): Generator<Uint8Array, void, undefined> {
  const buffer = Buffer.allocUnsafe(PIECE_BYTES + MAX_IPV6_LINE + IPV4_WRITE_SLACK);
  let from = 0;
  for (;;) {
    const end = writeLines(list, buffer, from, PIECE_BYTES);
    if (end.pos > 0) yield buffer.subarray(0, end.pos);
    if (end.next === prefixCount(list)) return;
    from = end.next;
  }
}

/**
 * Writes the lines of prefixes `from` onwards (IPv4 first, then IPv6, as one index) into
 * `out` from its start, stopping once `limit` bytes are written (0: no limit; `out`
 * must then hold every line). Returns the position after the last line and the index of
 * the next prefix to write.
 */
function writeLines(
  list: PrefixList,
  out: Uint8Array,
  from: number,
  limit: number,
): { readonly pos: number; readonly next: number } {
  const { ipv4, ipv6 } = list;
  const n4 = ipv4.addresses.length;
  const n6 = ipv6.lengths.length;
  const stop = limit === 0 ? Number.POSITIVE_INFINITY : limit;
  let pos = 0;
  let i = from;
  for (; i < n4 && pos < stop; i++) {
    pos = writeIpv4Prefix(out, pos, ipv4.addresses[i]!, ipv4.lengths[i]!);
    out[pos++] = LF;
  }
  for (; i < n4 + n6 && pos < stop; i++) {
    const k = i - n4;
    pos = writeIpv6Prefix(out, pos, ipv6.words, 4 * k, ipv6.lengths[k]!);
    out[pos++] = LF;
  }
  return { pos, next: i };
}
