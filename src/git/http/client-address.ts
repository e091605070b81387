import type { IncomingMessage } from 'node:http';
import { isIPv6 } from 'node:net';

/**
 * The client a request comes from, as limits per client count it: the peer's IPv4 address, or the
 * /64 of an IPv6 one (a single host usually holds a whole /64, so counting addresses would not
 * bound it). This is the connection's peer: behind a reverse proxy every client is the proxy.
 */
export function clientAddress(req: IncomingMessage): string {
  const address = (req.socket.remoteAddress ?? '').replace(/%.*$/, ''); // no zone index
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address || 'unknown';
  const [left = '', right] = address.split('::');
  const head = left ? left.split(':') : [];
  const tail = right === undefined ? [] : right.split(':').filter(Boolean);
  const groups = [...head, ...Array<string>(Math.max(0, 8 - head.length - tail.length)).fill('0'), ...tail];
  return `${groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
