import net from 'node:net';
import postgres from 'postgres';
import { sleep } from './support/server.js';

/**
 * postgres.js 3.4.9 as the service installs it: patched by `npm ci` (patches/postgres+3.4.9.patch).
 * Unpatched, a connection whose socket closed kept what it was doing for the next socket:
 *  - a statement buffered for the next turn of the event loop, behind which every later start-up
 *    message stayed buffered and unsent, so each reconnection ended in CONNECT_TIMEOUT, for ever.
 *    The service's hot reads share one connection: after a database restart it answered 503 to
 *    everything until it was restarted;
 *  - a result half received (its row count, the error the server sent before closing), so the next
 *    statement was rejected with the old error and the one after it answered with a hole where
 *    the old row had been: a write's `const [row]` read nothing though the write was done.
 * Each test provokes one case on a real database; each fails unpatched.
 */

const url = () => new URL(process.env.CAIRN_TEST_DATABASE_URL!);

/** A client of one connection over sockets the test holds, with the service's read settings. */
function clientOwningItsSockets(options: postgres.Options<Record<string, postgres.PostgresType>> = {}) {
  const target = url();
  const host = decodeURIComponent(target.hostname);
  const port = Number(target.port || 5432);
  const sockets: net.Socket[] = [];
  const open = (): net.Socket => {
    const socket = host.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${port}`) : net.connect(port, host);
    sockets.push(socket);
    return socket;
  };
  const ownSockets = { socket: open }; // an option postgres.js reads but does not declare
  const sql = postgres(target.href, { max: 1, connect_timeout: 10, onnotice: () => undefined, ...options, ...ownSockets });
  return { sql, sockets };
}

test('a connection whose socket closes while a statement waits to be written connects again and answers', async () => {
  // The socket's 'close' is held back, as when a server's last message (a FATAL error, say) is read
  // a turn before its socket's close: a statement handed over in between is buffered on a socket
  // that is already gone. It is let through once postgres.js has built (and buffered) the statement.
  let closeHeld: (() => void) | undefined;
  let holdClose = false;
  let closeCame: () => void = () => undefined;
  const closeHeldBack = new Promise<void>((resolve) => (closeCame = resolve));
  const debug = (_connection: number, text: string) => text.includes('as lost') && process.nextTick(() => closeHeld?.());
  const { sql, sockets } = clientOwningItsSockets({ debug });
  try {
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
    const first = sockets[0]!;
    const emit = first.emit.bind(first);
    first.emit = (event: string | symbol, ...args: unknown[]) => {
      if (event !== 'close' || !holdClose) return emit(event, ...args);
      closeHeld = () => emit(event, ...args);
      closeCame();
      return true;
    };
    holdClose = true;
    first.destroy();
    await closeHeldBack;
    holdClose = false;
    await expect(sql`select 2 as lost`).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
    expect(await sql`select 3 as three`).toEqual([{ three: 3 }]); // unpatched: CONNECT_TIMEOUT
    expect(sockets).toHaveLength(2);
    expect(sockets[1]!.bytesWritten).toBeGreaterThan(0); // its start-up message left
  } finally {
    await sql.end({ timeout: 1 });
  }
});

test('a connection closed by the server in the middle of a result answers the next statements with their own rows', async () => {
  const { sql, sockets } = clientOwningItsSockets();
  const admin = clientOwningItsSockets().sql;
  try {
    const [{ pid }] = await sql<Array<{ pid: number }>>`select pg_backend_pid() as pid`;
    // Rows of 1 KB, one every 10 ms: the result comes in pieces, and never ends by itself.
    const reading = sql`select repeat('x', 1000) as pad, pg_sleep(0.01) from generate_series(1, 100000)`.then(
      () => null,
      (error: { code?: string }) => error,
    );
    const received = sockets[0]!.bytesRead;
    for (let waited = 0; sockets[0]!.bytesRead < received + 10_000; waited += 10) {
      if (waited > 20_000) throw new Error('no rows came');
      await sleep(10);
    }
    await admin`select pg_terminate_backend(${pid})`; // FATAL 57P01, then the server closes the socket
    expect((await reading)?.code).toMatch(/^(57P01|CONNECTION_CLOSED)$/);
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]); // unpatched: rejected with 57P01
    expect(await sql`select 2 as two`).toEqual([{ two: 2 }]); // unpatched: [<hole>, { two: 2 }]
  } finally {
    await Promise.all([sql.end({ timeout: 1 }), admin.end({ timeout: 1 })]);
  }
});

test('a connection lost while it reads the array types at connect fails the statement waiting on it, leaves nothing unhandled, and connects again', async () => {
  const unhandled: unknown[] = [];
  const note = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', note);
  let lost = false;
  // postgres.js reads the array types first thing on a new connection: the socket is reset as it does.
  const debug = (_connection: number, text: string) =>
    text.includes('typarray') && !lost && ((lost = true), process.nextTick(() => sockets[0]!.destroy(new Error('connection reset'))));
  const { sql, sockets } = clientOwningItsSockets({ debug });
  try {
    await expect(sql`select 1 as one`).rejects.toThrow('connection reset');
    expect(await sql`select 2 as two`).toEqual([{ two: 2 }]);
    await new Promise((resolve) => setImmediate(resolve)); // an unhandled rejection is reported after the microtasks
    expect(unhandled).toEqual([]); // unpatched: the array-type query's rejection, which ends a Node process
  } finally {
    process.off('unhandledRejection', note);
    await sql.end({ timeout: 1 });
  }
});
