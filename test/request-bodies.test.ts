import net from 'node:net';
import { adminClient, createUser } from './support/client.js';
import { CairnServer, sleep } from './support/server.js';

/**
 * API request bodies are read within bounds: one account's slow bodies — each a MiB announced and
 * held back — are refused past 32 at once, and everyone else is served meanwhile. (Read as strings,
 * 200 such GraphQL bodies had run the service's heap out.)
 */
let server: CairnServer;

beforeAll(async () => {
  server = await CairnServer.start();
});
afterAll(() => server.destroy());

/** A POST whose body is announced as 1 MiB, of which 100 KB is sent; resolves with the status if one comes within `waitMs`. */
function slowBody(path: string, token: string, waitMs: number): { socket: net.Socket; status: Promise<number | null> } {
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
    setTimeout(() => resolve(null), waitMs);
  });
  socket.write(
    [
      `POST ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${server.port}`,
      `Authorization: Bearer ${token}`,
      'Content-Type: application/json',
      `Content-Length: ${1024 * 1024 - 10}`,
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
  await sleep(500);
  const refused = await Promise.all(Array.from({ length: 8 }, () => slowBody('/graphql', mallory.token, 5000).status));
  expect(refused).toEqual(Array(8).fill(429));
  expect(await Promise.all(held.map((request) => request.status))).toEqual(Array(32).fill(null)); // still being read

  const started = performance.now();
  const answer = await admin.graphql('{ viewer { login } }');
  expect(answer.data).toEqual({ viewer: { login: 'admin' } });
  expect(performance.now() - started).toBeLessThan(2000);

  for (const request of held) request.socket.destroy();
  await sleep(300);
  expect((await mallory.graphql('{ viewer { login } }')).data).toEqual({ viewer: { login: 'mallory' } });
});
