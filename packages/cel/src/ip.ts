/**
 * The Kubernetes IP and CIDR libraries (since 1.30): `ip("10.0.0.1")`, `isIP`,
 * `ip.isCanonical`, `family`, `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`,
 * `isLinkLocalUnicast`, `isGlobalUnicast`, `string(ip)`; `cidr("10.0.0.0/8")`, `isCIDR`,
 * `containsIP`, `containsCIDR`, `ip()`, `masked()`, `prefixLength()`, `string(cidr)`.
 *
 * Parsing follows Go's net/netip, which Kubernetes uses, plus its two refusals: no zone
 * (`fe80::1%eth0`) and no IPv4-mapped IPv6 address (`::ffff:1.2.3.4`). IPv4 octets with
 * leading zeros are invalid (they were once read as octal).
 */
import { charge } from './cost.ts';
import { CEL_EQUALS } from './equality.ts';
import { evalError, OVERRIDE_PREFIX, type Registrar } from './library.ts';
import { TO_JSON_STRING } from './values.ts';

type Parsed =
  | { readonly ok: true; readonly bytes: Uint8Array; readonly family: 4 | 6 }
  | { readonly ok: false; readonly error: string };

function parseV4(s: string): Uint8Array | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i] as string;
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p[0] === '0')) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

function parseV6(s: string): Uint8Array | undefined {
  let head = s;
  let v4: Uint8Array | undefined;
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.')) {
    v4 = parseV4(s.slice(lastColon + 1));
    if (!v4) return undefined;
    // The dotted quad stands for the last two groups.
    head = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const dbl = head.indexOf('::');
  if (dbl !== head.lastIndexOf('::') && dbl >= 0) return undefined;
  const parseGroups = (t: string): number[] | undefined => {
    if (t === '') return [];
    const gs = t.split(':');
    const out: number[] = [];
    for (const g of gs) {
      if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return undefined;
      out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  let groups: number[];
  if (dbl >= 0) {
    const left = parseGroups(head.slice(0, dbl));
    const right = parseGroups(head.slice(dbl + 2));
    if (!left || !right || left.length + right.length > 7) return undefined;
    groups = [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  } else {
    const all = parseGroups(head);
    if (all?.length !== 8) return undefined;
    groups = all;
  }
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  });
  if (v4) out.set(v4, 12);
  return out;
}

function parseAddr(s: string): Parsed {
  if (s.includes('%')) return { ok: false, error: 'IP address with zone value is not allowed' };
  if (!s.includes(':')) {
    const b = parseV4(s);
    return b
      ? { ok: true, bytes: b, family: 4 }
      : { ok: false, error: `IP Address "${s}" parse error during conversion from string` };
  }
  const b = parseV6(s);
  if (!b) return { ok: false, error: `IP Address "${s}" parse error during conversion from string` };
  if (b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) {
    return { ok: false, error: 'IPv4-mapped IPv6 address is not allowed' };
  }
  return { ok: true, bytes: b, family: 6 };
}

function formatAddr(bytes: Uint8Array, family: 4 | 6): string {
  if (family === 4) return Array.from(bytes).join('.');
  const groups = Array.from(
    { length: 8 },
    (_, i) => ((bytes[i * 2] as number) << 8) | (bytes[i * 2 + 1] as number),
  );
  // RFC 5952: compress the longest run (at least two) of zero groups, the first one on a tie.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

export class IPAddress {
  readonly bytes: Uint8Array;
  readonly family: 4 | 6;
  constructor(bytes: Uint8Array, family: 4 | 6) {
    this.bytes = bytes;
    this.family = family;
  }
  toString(): string {
    return formatAddr(this.bytes, this.family);
  }
  [TO_JSON_STRING](): string {
    return this.toString();
  }
  [CEL_EQUALS](o: unknown): boolean {
    return o instanceof IPAddress && o.family === this.family && Buffer.compare(o.bytes, this.bytes) === 0;
  }
}

export class CIDR {
  readonly ip: IPAddress;
  readonly bits: number;
  constructor(ip: IPAddress, bits: number) {
    this.ip = ip;
    this.bits = bits;
  }
  masked(): CIDR {
    const b = new Uint8Array(this.ip.bytes);
    for (let i = 0; i < b.length; i++) {
      const keep = Math.max(0, Math.min(8, this.bits - i * 8));
      b[i] = (b[i] as number) & ((0xff << (8 - keep)) & 0xff);
    }
    return new CIDR(new IPAddress(b, this.ip.family), this.bits);
  }
  contains(ip: IPAddress): boolean {
    if (ip.family !== this.ip.family) return false;
    const m = this.masked().ip.bytes;
    const other = new CIDR(ip, this.bits).masked().ip.bytes;
    return Buffer.compare(m, other) === 0;
  }
  toString(): string {
    return `${this.ip}/${this.bits}`;
  }
  [TO_JSON_STRING](): string {
    return this.toString();
  }
  [CEL_EQUALS](o: unknown): boolean {
    return o instanceof CIDR && o.bits === this.bits && o.ip[CEL_EQUALS](this.ip);
  }
}

function ipOf(s: string): IPAddress {
  charge(1);
  const p = parseAddr(s);
  if (!p.ok) throw evalError(p.error);
  return new IPAddress(p.bytes, p.family);
}

function parseCidr(s: string): CIDR | string {
  const slash = s.lastIndexOf('/');
  if (slash < 0)
    return `network address parse error during conversion from string: netip.ParsePrefix("${s}"): no '/'`;
  const p = parseAddr(s.slice(0, slash));
  if (!p.ok) return p.error;
  const bitsText = s.slice(slash + 1);
  const max = p.family === 4 ? 32 : 128;
  if (!/^(0|[1-9]\d{0,2})$/.test(bitsText) || Number(bitsText) > max) {
    return `network address parse error during conversion from string: netip.ParsePrefix("${s}"): bad bits after slash: "${bitsText}"`;
  }
  return new CIDR(new IPAddress(p.bytes, p.family), Number(bitsText));
}

function cidrOf(s: string): CIDR {
  charge(1);
  const c = parseCidr(s);
  if (typeof c === 'string') throw evalError(c);
  return c;
}

const inRange = (ip: IPAddress, cidr: string): boolean => (parseCidr(cidr) as CIDR).contains(ip);

function isGlobalUnicast(ip: IPAddress): boolean {
  const b = ip.bytes;
  if (ip.family === 4) {
    if (b.every((x) => x === 0xff) || b.every((x) => x === 0)) return false;
    return !inRange(ip, '127.0.0.0/8') && !inRange(ip, '224.0.0.0/4') && !inRange(ip, '169.254.0.0/16');
  }
  if (b.every((x) => x === 0)) return false;
  return !inRange(ip, '::1/128') && !inRange(ip, 'ff00::/8') && !inRange(ip, 'fe80::/10');
}

export function registerIp(r: Registrar): void {
  r.env.registerType('net.IP', IPAddress);
  r.env.registerType('net.CIDR', CIDR);
  r.env.registerOperator('net.IP == net.IP', (a: IPAddress, b: IPAddress) => a[CEL_EQUALS](b));
  r.env.registerOperator('net.CIDR == net.CIDR', (a: CIDR, b: CIDR) => a[CEL_EQUALS](b));
  const ns = r.namespace('ip');
  r.fn('ip(string): net.IP', ipOf)
    .fn('isIP(string): bool', (s: string) => parseAddr(s).ok)
    .fn(`${ns}.isCanonical(string): bool`, (_: object, s: string) => ipOf(s).toString() === s)
    .fn(`${OVERRIDE_PREFIX}string(net.IP): string`, (ip: IPAddress) => ip.toString())
    .fn('net.IP.family(): int', (ip: IPAddress) => BigInt(ip.family))
    .fn('net.IP.isUnspecified(): bool', (ip: IPAddress) => ip.bytes.every((x) => x === 0))
    .fn('net.IP.isLoopback(): bool', (ip: IPAddress) =>
      inRange(ip, ip.family === 4 ? '127.0.0.0/8' : '::1/128'),
    )
    .fn('net.IP.isLinkLocalMulticast(): bool', (ip: IPAddress) =>
      ip.family === 4
        ? inRange(ip, '224.0.0.0/24')
        : ip.bytes[0] === 0xff && ((ip.bytes[1] as number) & 0x0f) === 0x02,
    )
    .fn('net.IP.isLinkLocalUnicast(): bool', (ip: IPAddress) =>
      inRange(ip, ip.family === 4 ? '169.254.0.0/16' : 'fe80::/10'),
    )
    .fn('net.IP.isGlobalUnicast(): bool', isGlobalUnicast)
    .fn('cidr(string): net.CIDR', cidrOf)
    .fn('isCIDR(string): bool', (s: string) => typeof parseCidr(s) !== 'string')
    .fn(`${OVERRIDE_PREFIX}string(net.CIDR): string`, (c: CIDR) => c.toString())
    .fn('net.CIDR.containsIP(net.IP): bool', (c: CIDR, ip: IPAddress) => c.contains(ip))
    .fn('net.CIDR.containsIP(string): bool', (c: CIDR, s: string) => c.contains(ipOf(s)))
    .fn('net.CIDR.containsCIDR(net.CIDR): bool', (c: CIDR, o: CIDR) => o.bits >= c.bits && c.contains(o.ip))
    .fn('net.CIDR.containsCIDR(string): bool', (c: CIDR, s: string) => {
      const o = cidrOf(s);
      return o.bits >= c.bits && c.contains(o.ip);
    })
    .fn('net.CIDR.ip(): net.IP', (c: CIDR) => c.ip)
    .fn('net.CIDR.masked(): net.CIDR', (c: CIDR) => c.masked())
    .fn('net.CIDR.prefixLength(): int', (c: CIDR) => BigInt(c.bits));
}
