import fs from 'node:fs/promises';
import type { Socket } from 'node:net';
import os from 'node:os';

/**
 * Bytes of each connection that the kernel has taken to send and the peer has acknowledged: how
 * much of what the server wrote the client has actually drained. What Node hands to the kernel only
 * moves when the kernel's send buffer (grown to megabytes after a fast start) has room again, so a
 * client reading steadily at a few KiB/s can look stalled for minutes; the acknowledgements show its
 * real pace. The kernel's unacknowledged count is read from Linux's /proc/net/tcp{,6} — a walk of
 * every socket, some milliseconds per thousand, so callers ask it rarely; where it cannot be read
 * (another system, a connection it does not tell apart), the bytes handed to the kernel stand in.
 */
export async function drained(sockets: Socket[]): Promise<Map<Socket, number>> {
  const queued = await unacknowledged(sockets);
  return new Map(sockets.map((socket) => [socket, handedToKernel(socket) - (queued.get(socket) ?? 0)]));
}

/** Bytes handed to the kernel: written by Node's stream handle, less what libuv still queues. */
export function handedToKernel(socket: Socket): number {
  // Node has no public count of this: `bytesWritten` also counts what its own buffers still hold.
  const handle = (socket as unknown as { _handle?: { bytesWritten?: unknown; writeQueueSize?: unknown } })._handle;
  if (typeof handle?.bytesWritten === 'number' && typeof handle.writeQueueSize === 'number') {
    return handle.bytesWritten - handle.writeQueueSize;
  }
  return (socket.bytesWritten || 0) - socket.writableLength; // a destroyed socket counts no bytes
}

const littleEndian = os.endianness() === 'LE';

/** The kernel's send queue (written, not yet acknowledged) of each socket it can tell apart, by local and remote port. */
async function unacknowledged(sockets: Socket[]): Promise<Map<Socket, number>> {
  const byPorts = new Map<string, Socket | null>();
  for (const socket of sockets) {
    if (!socket.localPort || !socket.remotePort) continue;
    const key = `${socket.localPort} ${socket.remotePort}`;
    byPorts.set(key, byPorts.has(key) ? null : socket); // two clients on the same port pair: tell neither
  }
  const found = new Map<Socket, number>();
  const seen = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const table = await fs.readFile(file, 'utf8').catch(() => '');
    for (const line of table.split('\n')) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1]?.split(':');
      const remote = fields[2]?.split(':');
      const queues = fields[4]?.split(':');
      if (!local?.[1] || !remote?.[1] || !queues?.[0] || fields[3] === 'st') continue;
      const key = `${parseInt(local[1], 16)} ${parseInt(remote[1], 16)}`;
      const socket = byPorts.get(key);
      if (!socket || !sameAddress(remote[0]!, socket.remoteAddress)) continue;
      if (seen.has(key))
        found.delete(socket); // more than one line for this socket: unsure
      else found.set(socket, parseInt(queues[0], 16));
      seen.add(key);
    }
  }
  return found;
}

/** Whether an address as /proc prints it (hex words in the host's byte order) is this socket's peer. */
function sameAddress(hex: string, address: string | undefined): boolean {
  if (!address) return false;
  const bytes: number[] = [];
  for (let word = 0; word < hex.length; word += 8) {
    const group = hex
      .slice(word, word + 8)
      .match(/../g)!
      .map((pair) => parseInt(pair, 16));
    bytes.push(...(littleEndian ? group.reverse() : group));
  }
  const v4 = bytes.length === 4 ? bytes : isMappedV4(bytes) ? bytes.slice(12) : null;
  if (v4) return address.replace(/^::ffff:/i, '') === v4.join('.');
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
  return expandIPv6(address) === groups.join(':');
}

function isMappedV4(bytes: number[]): boolean {
  return bytes.length === 16 && bytes.slice(0, 10).every((byte) => byte === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
}

/** An IPv6 address as eight unpadded hex groups (`::1` → `0:0:0:0:0:0:0:1`). */
function expandIPv6(address: string): string {
  const [left = '', right] = address.replace(/%.*$/, '').toLowerCase().split('::');
  const head = left ? left.split(':') : [];
  const tail = right ? right.split(':') : [];
  const groups = [...head, ...Array<string>(Math.max(0, 8 - head.length - tail.length)).fill('0'), ...tail];
  return groups.map((group) => parseInt(group, 16).toString(16)).join(':');
}
