import net from 'node:net';
import pino from 'pino';
import { REF_GUARD_ENV } from '../../src/git/hooks.js';
import { openQuestions, type DecideUpdate } from '../../src/protection/push-questions.js';

/**
 * The loopback socket a push's `update` hook asks about branch updates through: it answers the
 * hook's exchange (a question, `need` facts, the answer), and whatever else connects — a local
 * process without the token, one that sends half a line and resets — ends that connection, never
 * the service.
 */
const ZERO = '0'.repeat(40);
const [A, B] = ['a', 'b'].map((x) => x.repeat(40)) as [string, string];
const quiet = pino({ level: 'silent' });

/** Connects, writes `lines`, and collects what comes back until the socket closes. */
function exchange(port: number, lines: string[], answers: (said: string) => string | null = () => null): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let heard = '';
    socket.on('error', () => resolve(heard));
    socket.on('data', (chunk) => {
      heard += chunk.toString();
      const reply = answers(heard);
      if (reply) socket.write(reply);
    });
    socket.on('close', () => resolve(heard));
    socket.write(lines.join(''));
  });
}

async function opened(decide: DecideUpdate) {
  const session = await openQuestions(decide, quiet);
  const [port, token] = session.env[REF_GUARD_ENV]!.split(' ') as [string, string];
  return { session, port: Number(port), token };
}

test('answers the hook: ok, refuse with the reason, and asks for the facts a rule needs first', async () => {
  const { session, port, token } = await opened(async (question, learn) => {
    if (question.ref === 'refs/heads/free') return null;
    const facts = await learn(['forced', 'merges']);
    return facts.forced ? 'protected branch: force-push is not allowed' : null;
  });
  try {
    expect(await exchange(port, [`${token} refs/heads/free ${A} ${B}\n`])).toBe('ok\n');
    const forced = await exchange(port, [`${token} refs/heads/main ${A} ${B}\n`], (said) =>
      said === 'need forced merges\n' ? 'facts forced=1 merges=0\n' : null,
    );
    expect(forced).toBe('need forced merges\nrefuse protected branch: force-push is not allowed\n');
    const fastForward = await exchange(port, [`${token} refs/heads/main ${A} ${B}\n`], (said) =>
      said === 'need forced merges\n' ? 'facts forced=0 merges=0\n' : null,
    );
    expect(fastForward).toBe('need forced merges\nok\n');
  } finally {
    await session.close();
  }
});

test('a wrong token, a malformed question, a reset or silence ends that connection only', async () => {
  let asked = 0;
  const { session, port, token } = await opened(async () => {
    asked++;
    return null;
  });
  try {
    expect(await exchange(port, [`${'0'.repeat(48)} refs/heads/main ${A} ${B}\n`])).toBe('');
    expect(await exchange(port, [`${token} refs/heads/main not-a-sha ${B}\n`])).toBe('');
    // Half a line, then a reset: the process must not crash (an unhandled ECONNRESET would end it).
    await new Promise<void>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(`${token} refs/heads/ma`);
        setTimeout(() => {
          socket.resetAndDestroy();
          resolve();
        }, 20);
      });
    });
    // A line far longer than any question.
    expect(await exchange(port, ['x'.repeat(64 * 1024)])).toBe('');
    expect(asked).toBe(0);
    // Still answering.
    expect(await exchange(port, [`${token} refs/heads/main ${ZERO} ${B}\n`])).toBe('ok\n');
    expect(asked).toBe(1);
  } finally {
    await session.close();
  }
});

test('closing the session stops accepting and ends open connections at once', async () => {
  const { session, port } = await opened(async () => null);
  const idle = net.connect(port, '127.0.0.1');
  idle.on('error', () => undefined);
  await new Promise((resolve) => idle.once('connect', resolve));
  const started = Date.now();
  await session.close();
  expect(Date.now() - started).toBeLessThan(1_000);
  await expect(
    new Promise((resolve, reject) => {
      const late = net.connect(port, '127.0.0.1');
      late.once('connect', resolve);
      late.once('error', reject);
    }),
  ).rejects.toThrow(/ECONNREFUSED/);
});
