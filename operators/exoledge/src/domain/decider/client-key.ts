/**
 * The client as Valkey knows it: the key its challenges are counted under and its
 * clearance and nonces are bound to. An IPv4 address is one client. An IPv6 client is its
 * /64: a host picks any address of its /64 (privacy addresses rotate daily, and a bot can
 * take a new one per request), so counting per address would let a flood reset its
 * counter at will and a person's clearance would lapse with each new address.
 */
import type { IpAddress } from './client-address.ts';
import { formatAddress } from './client-address.ts';

/** The prefix length an IPv6 client is identified by. */
export const IPV6_CLIENT_PREFIX = 64;

const IPV6_CLIENT_MASK = ((1n << BigInt(IPV6_CLIENT_PREFIX)) - 1n) << BigInt(128 - IPV6_CLIENT_PREFIX);

/** `203.0.113.7`, or `2001:db8:1:2::/64` for any address of that /64. */
export function clientKey(address: IpAddress): string {
  if (address.family === 'ipv4') return formatAddress(address);
  const network = formatAddress({ family: 'ipv6', address: address.address & IPV6_CLIENT_MASK });
  return `${network}/${IPV6_CLIENT_PREFIX}`;
}
