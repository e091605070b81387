import { readFile } from 'node:fs/promises';
import net from 'node:net';

/** One end of a TCP connection, as the kernel sees it (Linux's /proc/net/tcp). */
export interface TcpEnd {
  /** This end, `address:port` (IPv4). */
  local: string;
  /** The other end, `address:port`. */
  remote: string;
  state: number;
  /** Bytes sent from this end and not yet taken by the other end's kernel. */
  unsent: number;
  /** Bytes received at this end that its process has not read yet. */
  unread: number;
}
export const ESTABLISHED = 0x01;
export const CLOSE_WAIT = 0x08;

/** `0100007F:1F90` (little-endian hex, as /proc/net/tcp writes it) as `127.0.0.1:8080`. */
function endpoint(hex: string): string {
  const [ip, port] = hex.split(':') as [string, string];
  return `${[6, 4, 2, 0].map((at) => parseInt(ip.slice(at, at + 2), 16)).join('.')}:${parseInt(port, 16)}`;
}

/** Every IPv4 TCP connection end on this machine, now. */
export async function tcpEnds(): Promise<TcpEnd[]> {
  const ends: TcpEnd[] = [];
  for (const line of (await readFile('/proc/net/tcp', 'utf8')).split('\n').slice(1)) {
    const [, local, remote, state, queues] = line.trim().split(/\s+/);
    if (!queues) continue;
    const [unsent, unread] = queues.split(':').map((n) => parseInt(n, 16)) as [number, number];
    ends.push({ local: endpoint(local!), remote: endpoint(remote!), state: parseInt(state!, 16), unsent, unread });
  }
  return ends;
}

/**
 * Loopback connections between these client ports and a service's port: the service's end and the
 * client's of each, by client port. An end that is missing has been closed (and is gone). A service
 * end with nothing unread has had every byte that reached it read by the service, and Node parses
 * what it reads in the same turn: a request whose head has been read is one the service is serving.
 */
export async function loopbackConnections(
  servicePort: number,
  clientPorts: number[],
): Promise<Map<number, { service?: TcpEnd; client?: TcpEnd }>> {
  const service = `127.0.0.1:${servicePort}`;
  const found = new Map<number, { service?: TcpEnd; client?: TcpEnd }>(clientPorts.map((port) => [port, {}]));
  for (const end of await tcpEnds()) {
    for (const port of clientPorts) {
      const client = `127.0.0.1:${port}`;
      if (end.local === service && end.remote === client) found.get(port)!.service = end;
      if (end.local === client && end.remote === service) found.get(port)!.client = end;
    }
  }
  return found;
}

/**
 * A client that goes on sending its body after the answer, as HTTP clients do: `request` (the head,
 * announcing a body of `sent` + `rest` bytes, and the `sent` bytes of it) goes out, the service
 * answers and ends its side, and then, a moment later, the `rest` goes out in 64 KiB writes before
 * the client closes. A service that closed its socket outright answers those bytes with a reset,
 * met here as EPIPE or ECONNRESET. Resolves with the answer and the errors met.
 */
export async function sendingAfterTheAnswer(
  port: number,
  request: string | Buffer,
  rest: number,
): Promise<{ answer: string; errors: string[] }> {
  // Half-open, as HTTP clients are: the service's end of its side does not stop this one's writing.
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  const errors: string[] = [];
  socket.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
  const ended = new Promise<void>((resolve) => socket.once('end', resolve));
  socket.write(request);
  await ended;
  await new Promise((resolve) => setTimeout(resolve, 200)); // a socket closed outright is gone by now
  const chunk = Buffer.alloc(64 * 1024, '0');
  for (let sent = 0; sent < rest; sent += chunk.length) {
    await new Promise<void>((resolve) => socket.write(chunk.subarray(0, Math.min(chunk.length, rest - sent)), () => resolve()));
  }
  socket.end();
  await new Promise((resolve) => socket.once('close', resolve));
  return { answer, errors };
}
