import net from 'node:net';
import postgres from 'postgres';

/**
 * postgres.js 3.4.9, as the service installs it (patched by `npm ci`: patches/postgres+3.4.9.patch).
 * A statement handed to a connection whose socket has just closed is buffered for the next turn of
 * the event loop; the close cancels that write. Unpatched, the connection still believed a write
 * was pending: every later reconnection buffered its start-up message behind the dead statement
 * and never sent it, so each ended in CONNECT_TIMEOUT, for ever. The service's hot reads share one
 * such connection: after a database restart it answered 503 to everything until it was restarted.
 */
test('a connection whose socket closes while a statement waits to be written connects again and answers', async () => {
  const url = new URL(process.env.CAIRN_TEST_DATABASE_URL!);
  const host = decodeURIComponent(url.hostname);
  const port = Number(url.port || 5432);
  const sockets: net.Socket[] = [];
  // The connection's 'close' can be held back, as when a server's last message (a FATAL error, say)
  // is read a turn before its socket's close: a statement handed over in between is buffered on a
  // socket that is already gone.
  let closeHeld: (() => void) | undefined;
  let holdClose = false;
  let closeCame: () => void = () => undefined;
  const closeHeldBack = new Promise<void>((resolve) => (closeCame = resolve));
  const open = (): net.Socket => {
    const socket = host.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${port}`) : net.connect(port, host);
    const emit = socket.emit.bind(socket);
    socket.emit = (event: string | symbol, ...args: unknown[]) => {
      if (event !== 'close' || !holdClose) return emit(event, ...args);
      closeHeld = () => emit(event, ...args);
      closeCame();
      return true;
    };
    sockets.push(socket);
    return socket;
  };
  // Once the statement is handed to the connection (and buffered), its socket's close is let through.
  const debug = (_connection: number, text: string) => text.includes('as lost') && process.nextTick(() => closeHeld?.());
  const ownSockets = { socket: open }; // an option postgres.js reads but does not declare
  const sql = postgres(url.href, { max: 1, connect_timeout: 2, onnotice: () => undefined, debug, ...ownSockets });
  try {
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
    holdClose = true;
    sockets.at(-1)!.destroy();
    await closeHeldBack;
    holdClose = false;
    await expect(sql`select 2 as lost`).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
    expect(await sql`select 3 as three`).toEqual([{ three: 3 }]); // unpatched: CONNECT_TIMEOUT after 2 s
    expect(sockets).toHaveLength(2);
  } finally {
    await sql.end({ timeout: 1 });
  }
});
