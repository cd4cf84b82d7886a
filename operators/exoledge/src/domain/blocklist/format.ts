/**
 * The canonical text of prefixes: always with the prefix length (`1.2.3.4/32`, never a
 * bare address, so that every line reads the same way), IPv6 as RFC 5952 writes it. The
 * canonical text of a list is one prefix per line, each ended by `\n`, in list order:
 * it is what the CLI prints, what `fingerprint` hashes and what the shards hold.
 */
import { formatIpv4, MAX_IPV4_LINE, writeIpv4Prefix } from './ipv4.ts';
import { formatIpv6, MAX_IPV6_LINE, writeIpv6Prefix } from './ipv6.ts';
import type { Prefix, PrefixList } from './prefix-list.ts';

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
  for (let i = 0; i < ipv6.addresses.length; i++)
    out.push(`${formatIpv6(ipv6.addresses[i]!)}/${ipv6.lengths[i]}`);
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
    ipv4.addresses.length * MAX_IPV4_LINE + ipv6.addresses.length * MAX_IPV6_LINE,
  );
  let pos = 0;
  for (let i = 0; i < ipv4.addresses.length; i++) {
    pos = writeIpv4Prefix(out, pos, ipv4.addresses[i]!, ipv4.lengths[i]!);
    out[pos++] = LF;
  }
  for (let i = 0; i < ipv6.addresses.length; i++) {
    pos = writeIpv6Prefix(out, pos, ipv6.addresses[i]!, ipv6.lengths[i]!);
    out[pos++] = LF;
  }
  return out.subarray(0, pos);
}
