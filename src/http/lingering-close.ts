import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How long a connection closed on an unread body keeps taking in what its client still sends. */
const LINGER_MS = 5_000;

/**
 * A request whose body the service will not read to its end — refused (too large, too many at
 * once) or cut off (too slow, git's pace floor): what still comes of it is read and dropped, and the
 * connection closes once the answer is out. Unread, the connection would wait for that body for ever
 * (there is no request timeout). Callers that piped the request somewhere unpipe it first (an
 * unpipe pauses it).
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  lingerOnClose(socket);
  if (!res.headersSent)
    res.setHeader('Connection', 'close'); // Node closes the connection after the answer
  else res.once('finish', () => socket.destroySoon()); // an answer already under way on a kept-alive connection (git's)
  req.resume();
}

/**
 * When this connection is closed after its answer, it closes the way nginx's lingering close does:
 * the answer goes out with the end of our side, and what the client is still sending of the body is
 * read and dropped until the client closes too, or for LINGER_MS at most. Closed at once with that
 * body still arriving, the kernel answers the unread bytes with a reset; a client still writing then
 * sees EPIPE or ECONNRESET instead of the answer that was waiting for it (fetch failed so, under
 * load, on a 413). Node parses no further request on this connection: its answer said
 * `Connection: close`.
 */
function lingerOnClose(socket: Socket): void {
  socket.destroySoon = () => {
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once('close', () => clearTimeout(timer));
    socket.end();
  };
}
