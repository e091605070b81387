import type { Socket } from 'node:net';

/** How long a connection closed on a refused body keeps taking in what its client still sends. */
const LINGER_MS = 5_000;

/**
 * When Node closes this connection after its answer, it closes the way nginx's lingering close
 * does: the answer goes out with the end of our side, and what the client is still sending of the
 * body we refused is read and dropped until the client closes too, or for LINGER_MS at most.
 * Closed at once with that body still arriving, the kernel answers the unread bytes with a reset;
 * a client still writing then sees EPIPE or ECONNRESET instead of the answer that was waiting for
 * it (fetch failed so, under load, on a 413). Node parses no further request on this connection:
 * its answer said `Connection: close`.
 */
export function lingerOnClose(socket: Socket): void {
  socket.destroySoon = () => {
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once('close', () => clearTimeout(timer));
    socket.end();
  };
}
