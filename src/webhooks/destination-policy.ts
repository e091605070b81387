import { BlockList, isIP } from 'node:net';

/**
 * Where webhooks may be sent (CAIRN_WEBHOOK_ALLOWED_HOSTS): a list
 * of rules, any of which allows a destination.
 *  - `external`: public unicast addresses only (the default);
 *  - `private`: RFC 1918 and IPv6 unique-local addresses;
 *  - `loopback`: 127.0.0.0/8 and ::1;
 *  - `*`: anything;
 *  - a CIDR (`10.1.0.0/16`, `fd00::/8`);
 *  - a host glob (`hooks.example.com`, `*.internal.example`): that name,
 *    whatever it resolves to (the operator vouches for it).
 * Addresses are judged as actually dialled, after DNS resolution, so a name
 * that resolves (or re-resolves) to a forbidden address is refused.
 */

/** Never external: loopback, private, link-local (incl. 169.254.169.254), CGNAT, unspecified, multicast, reserved. */
const NOT_EXTERNAL: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.88.99.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 96, 'ipv6'], // unspecified, loopback and IPv4-compatible (::a.b.c.d)
  ['64:ff9b::', 96, 'ipv6'], // NAT64: reaches the embedded IPv4 address, whatever it is
  ['64:ff9b:1::', 48, 'ipv6'],
  ['100::', 64, 'ipv6'],
  ['2001::', 23, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['2002::', 16, 'ipv6'], // 6to4: embeds an IPv4 address
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['fec0::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

function blockList(ranges: Array<[string, number, 'ipv4' | 'ipv6']>): BlockList {
  const list = new BlockList();
  for (const [network, prefix, family] of ranges) list.addSubnet(network, prefix, family);
  return list;
}

const notExternal = blockList(NOT_EXTERNAL);
const privateRanges = blockList([
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['fc00::', 7, 'ipv6'],
]);
const loopback = blockList([
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
]);

const TRANSLATED = /^(?:0{0,4}:){0,4}:?ffff:0{1,4}:(?:\d+\.\d+\.\d+\.\d+|[0-9a-f]{1,4}:[0-9a-f]{1,4})$/i;

/**
 * Unwraps IPv4-mapped IPv6 (`::ffff:127.0.0.1`, or in hex `::ffff:7f00:1`) so it is judged as the
 * IPv4 address it is: a socket connects to the IPv4 address itself.
 */
function normalise(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return { address: dotted[1]!, family: 'ipv4' };
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
    return { address: [high >> 8, high & 255, low >> 8, low & 255].join('.'), family: 'ipv4' };
  }
  return { address, family: isIP(address) === 6 ? 'ipv6' : 'ipv4' };
}

type Rule = (host: string, address: string, family: 'ipv4' | 'ipv6') => boolean;

export class DestinationPolicy {
  private readonly rules: Rule[];

  constructor(readonly spec: string[]) {
    this.rules = spec.map((rule): Rule => {
      if (rule === '*') return () => true;
      if (rule === 'external') return (_h, a, f) => !notExternal.check(a, f);
      if (rule === 'private') return (_h, a, f) => privateRanges.check(a, f);
      if (rule === 'loopback') return (_h, a, f) => loopback.check(a, f);
      const cidr = /^([0-9a-fA-F:.]+)\/(\d{1,3})$/.exec(rule);
      if (cidr) {
        const family = isIP(cidr[1]!) === 6 ? 'ipv6' : 'ipv4';
        const list = blockList([[cidr[1]!, Number(cidr[2]), family]]);
        return (_h, a, f) => list.check(a, f);
      }
      const glob = new RegExp(
        `^${rule
          .toLowerCase()
          .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '[a-z0-9-]+(?:\\.[a-z0-9-]+)*')}$`,
      );
      return (h) => glob.test(h.toLowerCase());
    });
  }

  /** Whether `address` (as dialled for `host`) may be connected to. */
  allows(host: string, address: string): boolean {
    // IPv4-translated (`::ffff:0:0/96`) reaches an IPv4 address through a translator, like NAT64: only `*` allows it.
    // (Judged by pattern: node's BlockList reads a `::ffff:` subnet as every IPv4 address.)
    if (TRANSLATED.test(address)) return this.spec.includes('*');
    const { address: ip, family } = normalise(address);
    if (!isIP(ip)) return false;
    return this.rules.some((rule) => rule(host, ip, family));
  }

  /** For a URL whose host is a literal address: the address, else null (a name is judged when dialled). */
  static literalAddress(url: URL): string | null {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    return isIP(host) ? host : null;
  }
}
