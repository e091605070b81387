import { readFile } from 'node:fs/promises';

/** One end of a TCP connection, as the kernel sees it (Linux's /proc/net/tcp). */
export interface TcpEnd {
  state: number;
  /** Bytes sent from this end and not yet taken by the other end's kernel. */
  unsent: number;
  /** Bytes received at this end that its process has not read yet. */
  unread: number;
}
export const ESTABLISHED = 0x01;
export const CLOSE_WAIT = 0x08;

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
  const address = (port: number) => `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const found = new Map<number, { service?: TcpEnd; client?: TcpEnd }>(clientPorts.map((port) => [port, {}]));
  for (const line of (await readFile('/proc/net/tcp', 'utf8')).split('\n').slice(1)) {
    const [, local, remote, state, queues] = line.trim().split(/\s+/);
    if (!queues) continue;
    const [unsent, unread] = queues.split(':').map((n) => parseInt(n, 16)) as [number, number];
    const end = { state: parseInt(state!, 16), unsent, unread };
    for (const port of clientPorts) {
      if (local === address(servicePort) && remote === address(port)) found.get(port)!.service = end;
      if (local === address(port) && remote === address(servicePort)) found.get(port)!.client = end;
    }
  }
  return found;
}
