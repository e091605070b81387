import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable, Transform, Writable } from 'node:stream';
import { DomainError } from '../../errors/domain-error.js';
import type { GitService } from '../../http/metrics.js';
import { GIT_STOP_GRACE_MS, underKernelBounds } from '../git-bounds.js';
import { stoppedAt, type GitLimitExceeded } from '../run-git.js';
import { environmentWithoutSecrets, serverGitEnvironment } from '../git-environment.js';
import { gitLauncher } from '../git-launcher-host.js';
import { ClientPace } from './client-pace.js';
import { pipedOutput, type GitOutput, type OutputSockets } from './git-output.js';
import { closeAfterAnswer } from '../../http/lingering-close.js';
import { bodyDecoder, ByteLimit, tooSlow, type RequestBody } from './request-body.js';

/** The two smart-protocol services git clients ask for (named with the metrics that count them). */
export type { GitService };

export interface ServiceRun {
  /** Exit code of git (null when it was killed). */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Whether any output reached the response (after which the status can no longer change). */
  responded: boolean;
  /** The end of git's stderr, for logs only (it can name paths on disk). */
  stderr: string;
  /** Why the request body could not be passed on, if it could not. */
  bodyError?: DomainError;
  /** The bound git was stopped at before it answered (its deadline or memory), if it was. */
  stoppedAt?: GitLimitExceeded;
}

/** The headers git-http-backend sends so that no proxy caches protocol traffic. */
export function setNoCache(res: ServerResponse): void {
  res.setHeader('Expires', 'Fri, 01 Jan 1980 00:00:00 GMT');
  res.setHeader('Pragma', 'no-cache');
  res.setHeader('Cache-Control', 'no-cache, max-age=0, must-revalidate');
}

/** `GIT_PROTOCOL` from the `Git-Protocol` header, when it looks like one (`version=2`, `key=value:key`). */
export function gitProtocolFrom(header: string | undefined): string | undefined {
  return header && /^[A-Za-z0-9._=:-]{1,256}$/.test(header) ? header : undefined;
}

/** Protocol v2 answers `info/refs` with capabilities only, without the v0 `# service=` preamble. */
function wantsV2(gitProtocol: string | undefined): boolean {
  return !!gitProtocol && gitProtocol.split(':').includes('version=2');
}

/** A pkt-line: 4 hex digits of length (including themselves), then the payload. */
function pktLine(payload: string): string {
  return (Buffer.byteLength(payload) + 4).toString(16).padStart(4, '0') + payload;
}

interface SpawnOptions {
  service: GitService;
  dir: string;
  /** `-c name=value` settings for this run. */
  config: string[];
  gitProtocol?: string;
  env?: Record<string, string>;
  /** What upload-pack's `pack-objects` runs behind: the pack cache (pack-cache.ts), when there is one. */
  packCache?: readonly string[] | null;
}

function serviceArgs(options: SpawnOptions, extraArgs: string[]): string[] {
  return [...options.config.flatMap((setting) => ['-c', setting]), options.service, '--stateless-rpc', ...extraArgs, options.dir];
}

function serviceEnv(options: SpawnOptions): Record<string, string> {
  return { ...(options.gitProtocol ? { GIT_PROTOCOL: options.gitProtocol } : {}), ...options.env };
}

/** A git of the wire protocol: its stdout is null when it writes to an output socket instead of a pipe. */
type GitChild = ChildProcessByStdio<Writable, Readable | null, Readable>;

/** The wire protocol's git, under the kernel's bounds (git-bounds.ts), which the processes it starts inherit. */
function spawnService(options: SpawnOptions, extraArgs: string[], stdout: Socket | 'pipe' = 'pipe'): GitChild {
  const { command, args } = underKernelBounds(options.service, serviceArgs(options, extraArgs), options.packCache ?? []);
  return spawn(command, args, {
    env: { ...environmentWithoutSecrets, ...serverGitEnvironment(), ...serviceEnv(options) },
    stdio: ['pipe', stdout, 'pipe'],
    // Out of the service's process group: a Ctrl-C meant for the service would kill a push in flight,
    // which the service's graceful stop lets finish. If the service dies, git is told to stop
    // (underKernelBounds: setpriv's parent-death signal).
    detached: true,
  }) as GitChild;
}

/**
 * git with its stdout on an output socket (git-output.ts) when there are any, read into a buffer of
 * its own; with a plain pipe otherwise, or when a socket cannot be had.
 */
async function spawnWithOutput(
  options: SpawnOptions,
  sockets: OutputSockets | null | undefined,
): Promise<{ child: GitChild; output: GitOutput }> {
  const socket = await sockets?.open().catch(() => null);
  if (!socket) {
    const child = spawnService(options, []);
    return { child, output: pipedOutput(child.stdout!) };
  }
  try {
    const child = spawnService(options, [], socket.gitEnd);
    socket.handedToGit();
    return { child, output: socket.output };
  } catch (error) {
    socket.cancel();
    throw error;
  }
}

/**
 * The most output of an answer made in the git launcher, held in memory: some 15,000 refs. A larger
 * one (a repository of very many refs) is stopped and streamed instead, with backpressure.
 */
const MAX_LAUNCHED_ANSWER_BYTES = 1024 * 1024;

/**
 * Answers a request whose answer is small — the advertisement, a v2 `ls-refs` — with git started by
 * the launcher (git-launcher-host.ts) instead of from the service: forking the service (a few hundred
 * MB) takes 10-100 ms on a busy machine and stalls its event loop, every other clone's output
 * included; the launcher's fork is cheap and happens off the event loop. A clone makes three
 * requests and only its pack needs streaming. Null when the answer was too large to hold (git was
 * stopped; nothing was written): the caller streams it instead.
 */
async function answerFromLauncher(
  res: ServerResponse,
  options: SpawnOptions,
  extraArgs: string[],
  input: Buffer | undefined,
  startResponse: () => void,
): Promise<Omit<ServiceRun, 'bodyError'> | null> {
  const launched = await gitLauncher
    .run(serviceArgs(options, extraArgs), { input, env: serviceEnv(options), maxOutputBytes: MAX_LAUNCHED_ANSWER_BYTES })
    .catch(() => null); // the launcher died under it: stream instead
  if (!launched || launched.truncated) return null;
  if (launched.exceeded) {
    // Nothing is sent of what git wrote before it was stopped: the client gets the bound instead.
    const stopped = stoppedAt(serviceArgs(options, extraArgs), launched.exceeded, {});
    return { code: null, signal: null, responded: false, stderr: launched.stderr.slice(-4096), stoppedAt: stopped };
  }
  const responded = launched.stdout.length > 0;
  if (responded && !res.destroyed) {
    startResponse();
    res.write(launched.stdout);
  }
  return { code: launched.code, signal: null, responded, stderr: launched.stderr.slice(-4096) };
}

/**
 * Streams git's output into the response, each chunk written before the next is read, so memory
 * stays flat whatever the pack size. The status and headers go out with the first byte of output:
 * until then a failing git can still get an honest error status. Resolves when git has exited and
 * its output is written. The response is not ended: the caller decides when (after recording a push).
 */
function relay(
  child: GitChild,
  output: GitOutput,
  res: ServerResponse,
  startResponse: () => void,
  onClientGone: () => void,
  mayAnswer: () => boolean = () => true,
): Promise<Omit<ServiceRun, 'bodyError'>> {
  return new Promise((resolve) => {
    let stderr = '';
    let responded = false;
    /** git's output goes nowhere from now on, but is still read, so git is never stuck on a full socket. */
    let discarding = false;
    let clientLeft = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let outputEnded = false;
    const finish = () => {
      if (exit && outputEnded) {
        res.off('close', clientGone);
        resolve({ ...exit, responded, stderr });
      }
    };
    const clientGone = () => {
      if (!res.writableFinished && !clientLeft) {
        clientLeft = true;
        discarding = true;
        output.resume();
        onClientGone();
      }
    };
    res.on('close', clientGone);
    if (res.destroyed) queueMicrotask(clientGone); // gone before we started listening

    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-4096);
    });
    output.start(
      (chunk) => {
        if (discarding) return true;
        if (!responded) {
          // git's answer came after its request was cut: the caller's error goes out instead.
          if (!mayAnswer() || res.destroyed) {
            discarding = true;
            return true;
          }
          responded = true;
          startResponse();
        }
        // The chunk may be the output's own buffer: nothing more is read until it is written.
        res.write(chunk, () => output.resume());
        return false;
      },
      () => {
        outputEnded = true;
        finish();
      },
    );
    child.once('error', (error) => {
      stderr += `\nspawn failed: ${error.message}`;
      exit = { code: null, signal: null };
      outputEnded = true;
      finish();
    });
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      finish();
    });
  });
}

/**
 * `GET info/refs?service=git-<service>`: runs `git <service> --stateless-rpc
 * --advertise-refs` (answerFromLauncher) and sends the advertisement.
 */
export async function advertiseRefs(res: ServerResponse, options: SpawnOptions): Promise<ServiceRun> {
  const v2 = options.service === 'upload-pack' && wantsV2(options.gitProtocol);
  const startResponse = () => {
    res.statusCode = 200;
    res.setHeader('Content-Type', `application/x-git-${options.service}-advertisement`);
    setNoCache(res);
    if (!v2) res.write(`${pktLine(`# service=git-${options.service}\n`)}0000`);
  };
  const launched = await answerFromLauncher(res, options, ['--advertise-refs'], undefined, startResponse);
  if (launched) return launched;
  const child = spawnService(options, ['--advertise-refs']);
  child.stdin.end();
  return relay(child, pipedOutput(child.stdout!), res, startResponse, () => child.kill('SIGTERM'));
}

/**
 * `POST git-upload-pack` with a protocol v2 `ls-refs` (the refs, no pack), its whole body in
 * `input`: answered like the advertisement (answerFromLauncher), streamed when too large.
 */
export async function listRefs(req: IncomingMessage, res: ServerResponse, options: RpcOptions, input: Buffer): Promise<ServiceRun> {
  const launched = await answerFromLauncher(res, options, [], input, () => startResult(res, options.service));
  return launched ?? runRpc(req, res, options);
}

function startResult(res: ServerResponse, service: GitService): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', `application/x-git-${service}-result`);
  setNoCache(res);
}

export interface RpcOptions extends SpawnOptions {
  /** Largest request body accepted after decompression; beyond it the request is cut off (413). */
  maxBodyBytes: number;
  /**
   * Kill git when the client goes away. Right for fetches (nobody wants the
   * pack any more); wrong for pushes, which must either finish or fail on
   * their own so that ref updates and their events stay together.
   */
  killOnDisconnect: boolean;
  /**
   * The request body, read to its end beforehand (fetches: a slow client holds no git while it
   * sends). Without it, the request is streamed into git as it arrives (pushes: the body is the pack).
   */
  body?: RequestBody;
  /**
   * When git must be done (epoch ms: a push's CAIRN_GIT_PUSH_TIMEOUT): then the request is cut off,
   * answered with this error (unless git has answered), and git stopped.
   */
  deadline?: { at: number; error: DomainError };
  /**
   * Sockets git's output may be read through (git-output.ts): a fetch's pack, whose reads would
   * otherwise each allocate a buffer. Without them, through a pipe.
   */
  outputSockets?: OutputSockets | null;
}

/**
 * `POST git-<service>`: the request body (gunzipped when the client
 * compressed it) is piped into `git <service> --stateless-rpc`, and its
 * output back into the response, both with backpressure.
 */
export async function runRpc(req: IncomingMessage, res: ServerResponse, options: RpcOptions): Promise<ServiceRun> {
  const decoder = options.body ? null : bodyDecoder(req.headers['content-encoding']);
  if (decoder instanceof DomainError) {
    req.resume();
    return { code: null, signal: null, responded: false, stderr: '', bodyError: decoder };
  }
  const { child, output } = await spawnWithOutput(options, options.outputSockets);
  child.stdin.on('error', () => undefined); // git may exit without reading all of its input
  let streamed: ReturnType<typeof streamBody> | null = null;
  if (options.body) options.body.pipeTo(child.stdin);
  else streamed = streamBody(req, res, child, decoder, options.maxBodyBytes);
  const deadline = options.deadline;
  let cutAtDeadline = false;
  const stop = deadline
    ? setTimeout(() => {
        cutAtDeadline = true;
        streamed?.cut(deadline.error);
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), GIT_STOP_GRACE_MS).unref();
      }, deadline.at - Date.now())
    : undefined;
  child.once('exit', () => clearTimeout(stop));
  child.once('error', () => clearTimeout(stop));
  const run = await relay(
    child,
    output,
    res,
    () => startResult(res, options.service),
    () => {
      if (options.killOnDisconnect) child.kill('SIGTERM'); // SIGTERM: git removes its lock and temp files
    },
    // What git says about a request cut at its deadline (an unpack error on the cut pack) must not
    // overtake the deadline's own answer.
    () => !cutAtDeadline,
  );
  return { ...run, bodyError: streamed?.error() ?? (cutAtDeadline ? deadline?.error : undefined) };
}

/**
 * Streams the request into git's stdin as it arrives, within `maxBytes` and the client's pace
 * (client-pace.ts). Returns what stopped the body, if anything did.
 */
function streamBody(
  req: IncomingMessage,
  res: ServerResponse,
  child: GitChild,
  decoder: Transform | null,
  maxBytes: number,
): { error: () => DomainError | undefined; cut: (error: DomainError) => void } {
  let bodyError: DomainError | undefined;
  const failBody = (error: DomainError) => {
    bodyError ??= error;
    child.stdin.destroy();
    req.destroy(); // stop receiving what nobody will read
  };
  // `pipe`, not `pipeline`: when git stops reading (a refused push, a failed fetch) the request
  // must stay open, so the client finishes sending and reads git's answer instead of a reset.
  const limiter = new ByteLimit(maxBytes);
  limiter.on('error', (error: DomainError) => failBody(error));
  if (decoder) {
    decoder.on('error', () => failBody(new DomainError('BAD_REQUEST', 'the request body is not valid gzip')));
    req.pipe(decoder).pipe(limiter);
  } else {
    req.pipe(limiter);
  }
  limiter.pipe(child.stdin);
  const pace = ClientPace.of(req);
  /** git gets no more of the request and fails; the client gets `error` (unless git has spoken) while what it still sends is discarded, and the connection closes after the answer. */
  const cut = (error: DomainError) => {
    bodyError ??= error;
    req.unpipe();
    closeAfterAnswer(req, res);
    child.stdin.destroy();
  };
  pace?.onSlowRequest(() => cut(tooSlow(pace)));
  const requestGone = () => {
    // The request closed before all of it reached git — mid-upload, or after the last byte arrived but
    // before it was read: git sees its input end and gives up, instead of waiting for it forever.
    if (!req.readableEnded) child.stdin.destroy();
  };
  req.on('close', requestGone);
  if (req.destroyed) requestGone(); // ...possibly while we waited for a lock or a slot
  child.stdin.on('error', () => {
    limiter.unpipe(child.stdin);
    limiter.resume(); // discard the rest, still counted against the limit
  });
  return { error: () => bodyError, cut };
}
