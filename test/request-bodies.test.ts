import net from 'node:net';
import { adminClient, createUser } from './support/client.js';
import { eventually } from './support/receiver.js';
import { CairnServer } from './support/server.js';
import { CLOSE_WAIT, ESTABLISHED, loopbackConnections, sendingAfterTheAnswer } from './support/tcp.js';

/**
 * API request bodies are read within bounds: one account's slow bodies — each a MiB announced and
 * held back — are refused past 32 at once, and everyone else is served meanwhile. (Read as strings,
 * 200 such GraphQL bodies had run the service's heap out.)
 */
let server: CairnServer;

beforeAll(async () => {
  server = await CairnServer.sharedServer();
});
afterAll(() => server.destroy());

/** A POST whose body is announced as `announced` bytes (just under 1 MiB), of which 100 KB is sent; resolves with the status if one comes within `waitMs`. */
function slowBody(
  path: string,
  token: string,
  waitMs: number,
  announced = 1024 * 1024 - 10,
): { socket: net.Socket; status: Promise<number | null> } {
  const socket = net.connect(server.port, '127.0.0.1');
  socket.on('error', () => undefined);
  const status = new Promise<number | null>((resolve) => {
    let head = '';
    socket.on('data', (chunk) => {
      head += chunk.toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (match) resolve(Number(match[1]));
    });
    socket.on('close', () => resolve(null));
    setTimeout(() => resolve(null), waitMs).unref();
  });
  socket.write(
    [
      `POST ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${server.port}`,
      `Authorization: Bearer ${token}`,
      'Content-Type: application/json',
      `Content-Length: ${announced}`,
      '',
      '',
    ].join('\r\n'),
  );
  socket.write(`{"query": "${'x'.repeat(100_000)}`);
  return { socket, status };
}

test("one account's slow bodies: 32 are held, more are refused at once (429), others are served; the slots free when they go", async () => {
  const admin = adminClient(server);
  const mallory = await createUser(admin, 'mallory');
  const held = Array.from({ length: 32 }, (_, i) => slowBody(i % 2 ? '/graphql' : '/repos', mallory.token, 1500));
  // Each held body is being read, its slot taken. Until a body is read, the service's HTTP parser
  // stops taking bytes off its connection after one read (at most 64 KiB): the rest of the 100 KB
  // sent waits in the kernel. Once none does, every held body is in the hands of its reader.
  await Promise.all(held.map(({ socket }) => socket.connecting && new Promise((resolve) => socket.once('connect', resolve))));
  const ports = held.map(({ socket }) => socket.localPort!);
  await eventually(
    async () =>
      held.every(({ socket }) => socket.writableLength === 0) &&
      [...(await loopbackConnections(server.port, ports)).values()].every(
        ({ service, client }) => service?.state === ESTABLISHED && service.unread === 0 && client?.unsent === 0,
      ),
    15_000,
    'the service to be reading all 32 held bodies',
  );
  // A body read off its connection is not yet a slot taken: that follows the caller's authentication,
  // which on a loaded machine may still be under way for some. A whole small request says when every
  // slot is taken (answered 429), and changes nothing when it is served instead (a query).
  await eventually(
    async () => (await mallory.post('/graphql', { query: '{ viewer { login } }' })).status === 429,
    15_000,
    'all 32 slots taken',
  );
  const refusals = Array.from({ length: 8 }, () => slowBody('/graphql', mallory.token, 5000));
  const refused = await Promise.all(refusals.map((request) => request.status));
  expect(refused).toEqual(Array(8).fill(429));
  // The service closes each refused connection rather than wait for a body it will not read.
  await eventually(async () => refusals.every(({ socket }) => socket.closed), 5_000, 'the service to close each refused connection');
  expect(await Promise.all(held.map((request) => request.status))).toEqual(Array(32).fill(null)); // still being read

  const started = performance.now();
  const answer = await admin.graphql('{ viewer { login } }');
  expect(answer.data).toEqual({ viewer: { login: 'admin' } });
  expect(performance.now() - started).toBeLessThan(2000);

  for (const request of held) request.socket.destroy();
  // The slots free as the service sees the connections go: its ends of them closed.
  await eventually(
    async () =>
      [...(await loopbackConnections(server.port, ports)).values()].every(
        ({ service }) => service?.state !== ESTABLISHED && service?.state !== CLOSE_WAIT,
      ),
    10_000,
    'the service to close the 32 connections',
  );
  expect((await mallory.graphql('{ viewer { login } }')).data).toEqual({ viewer: { login: 'mallory' } });
});

test('a body announced over 1 MiB is refused (413) before it is read, and its connection closed rather than left waiting for it', async () => {
  const admin = adminClient(server);
  const sender = await createUser(admin, 'oversender');
  const refused = slowBody('/graphql', sender.token, 5000, 1024 * 1024 + 1);
  expect(await refused.status).toBe(413);
  await eventually(async () => refused.socket.closed, 5_000, 'the service to close the refused connection');
});

test('a client still sending a refused body when the 413 arrives sends the rest and reads the answer, without a reset', async () => {
  const sender = await createUser(adminClient(server), 'latesender');
  const first = 64 * 1024;
  const announced = 2 * 1024 * 1024;
  const head = ['POST /graphql HTTP/1.1', `Host: 127.0.0.1:${server.port}`, `Authorization: Bearer ${sender.token}`];
  const request = `${[...head, 'Content-Type: application/json', `Content-Length: ${announced}`, '', ''].join('\r\n')}${'x'.repeat(first)}`;
  const { answer, errors } = await sendingAfterTheAnswer(server.port, request, announced - first);
  expect(answer).toMatch(/^HTTP\/1\.1 413 /);
  expect(answer).toMatch(/connection: close/i);
  expect(answer).toContain('PAYLOAD_TOO_LARGE');
  expect(errors).toEqual([]);
});
