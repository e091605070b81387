import type { Request, RequestHandler, Response } from 'express';
import { gitAccess, tokenFrom } from './git-auth.js';
import type { GitHttp } from './git-http.js';
import type { FetchClient, GitHosting } from './hosting.js';
import { knownError } from '../../errors/known-error.js';
import { DomainError } from '../../errors/domain-error.js';
import { rateLimitHeaders, refusal } from '../../ratelimit/rate-limits.js';
import type { Metrics } from '../../http/metrics.js';
import { clientAddress } from './client-address.js';
import { GitExchange } from './git-metrics.js';
import { ClientPace } from './client-pace.js';
import { finishGitResponse, sendGitAnswer } from './http-answers.js';
import { receivePack } from './receive.js';
import { readRequestBody } from './request-body.js';
import { advertiseRefs, gitProtocolFrom, listRefs, runRpc, type GitService, type RpcOptions } from './transport.js';

/** `/:owner/:repo(.git)?/<endpoint>`; anything else is not git's and falls through to the REST facade. */
const GIT_PATH = /^\/([^/]+)\/([^/]+)\/(info\/refs|git-upload-pack|git-receive-pack)$/;
const OWNER = /^[A-Za-z0-9-]{1,39}$/;
const REPOSITORY = /^[A-Za-z0-9._-]{1,100}$/;
/**
 * A fetch request is wants, haves and options: generous, but not endless. Negotiation needs this
 * much: a mirror fetch wants every ref (50 bytes each), and a client without common history sends
 * haves in rounds that grow by a tenth past 16384 lines. Read whole before git starts, past a few
 * MiB on disk (request-body.ts).
 */
const MAX_FETCH_REQUEST_BYTES = 100 * 1024 * 1024;
/**
 * A connection silent in both directions this long is dropped, so a stalled client cannot hold a
 * repository's push lock or a fetch slot forever. git keeps busy connections alive on its own
 * (sideband keepalives every 5 s while it prepares or indexes a pack).
 */
const IDLE_TIMEOUT_MS = 5 * 60_000;

interface GitRequest {
  owner: string;
  name: string;
  service: GitService;
  /** `info/refs` (the advertisement) or the POST that carries the protocol exchange. */
  advertise: boolean;
}

/**
 * Git smart HTTP at `{CAIRN_BASE_URL}/:owner/:repo.git` (suffix
 * optional): `GET info/refs?service=...`, `POST git-upload-pack`,
 * `POST git-receive-pack`. The protocol itself is the git binary's; this
 * only authenticates, finds the repository and streams.
 */
export function createGitHandler(services: GitHttp, hosting: GitHosting, metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const match = GIT_PATH.exec(req.path);
    if (!match) return next();
    handle(services, hosting, metrics, req, res, match).catch((error: unknown) => {
      const known = knownError(error);
      if (!known) services.log.error({ err: error, path: req.path }, 'git request failed');
      if (!res.headersSent) sendGitAnswer(res, known ?? new DomainError('INTERNAL', 'Internal error.'));
      else res.destroy();
    });
  };
}

async function handle(
  services: GitHttp,
  hosting: GitHosting,
  metrics: Metrics,
  req: Request,
  res: Response,
  match: RegExpExecArray,
): Promise<void> {
  const parsed = parseGitRequest(req, match);
  if (parsed instanceof DomainError) return sendGitAnswer(res, parsed);
  const { owner, name, service, advertise } = parsed;
  const exchange = new GitExchange(metrics, service, !advertise, req, res);

  const em = services.orm.em.fork();
  const token = tokenFrom(req.get('authorization'));
  const access = await gitAccess(services, em, token, owner, name, service === 'receive-pack');
  if (!access.ok) {
    // git asks without credentials first and sends them only when challenged: not a refusal.
    if (!token && access.error.code === 'UNAUTHENTICATED') exchange.uncounted();
    return sendGitAnswer(res, access.error);
  }
  if (!access.viewer && service === 'upload-pack') {
    // Anonymous fetches count per client address (every request of one: the advertisement and each exchange).
    const quota = await services.rateLimits.anonymousFetch(clientAddress(req));
    for (const [header, value] of rateLimitHeaders(quota)) res.setHeader(header, value);
    if (quota && !quota.allowed) {
      // 401, not 429: git sends the credentials it has only when challenged, so a client that has a
      // token retries with it (authenticated fetches are not limited here); one without learns why.
      const spent = refusal(quota, 'Too many anonymous fetches from this address: authenticate, or try again later.');
      exchange.ended('refused');
      return sendGitAnswer(res, new DomainError('UNAUTHENTICATED', spent.message, [], spent.retryAfterSeconds));
    }
  }

  req.setTimeout(IDLE_TIMEOUT_MS, () => req.destroy());
  const pace = ClientPace.watch(req, res, services.config.gitPaceWindowMs, services.log);
  const dir = await services.git.servedPath(access.repo.id);
  const gitProtocol = gitProtocolFrom(req.get('git-protocol'));
  // Partial clone is served whatever the repository's own config says (repositories created before it).
  const fetchConfig = ['uploadpack.allowFilter=true'];

  if (advertise) {
    // A push is not shown the pull refs it may not change (receive.ts hides them from its commands too).
    const config = service === 'upload-pack' ? fetchConfig : ['receive.hideRefs=refs/pull/'];
    const run = await advertiseRefs(res, { service, dir, config, gitProtocol });
    return finishGitResponse(res, run);
  }
  if (service === 'receive-pack') {
    const pushDone = hosting.startPush(access.viewer!.userId);
    if (!pushDone) {
      return sendGitAnswer(
        res,
        new DomainError('RATE_LIMITED', 'Too many pushes in progress from this account; try again when they have finished.'),
      );
    }
    metrics.gitPushesInFlight.inc();
    return hosting.track(receivePack(services, hosting, req, res, access.repo, access.viewer!, gitProtocol, exchange)).finally(() => {
      pushDone();
      metrics.gitPushesInFlight.dec();
    });
  }

  return serveFetch(services, hosting, req, res, pace, exchange, {
    client: { address: clientAddress(req), userId: access.viewer?.userId },
    repositoryId: access.repo.id,
    rpc: {
      service,
      dir,
      config: fetchConfig,
      gitProtocol,
      maxBodyBytes: MAX_FETCH_REQUEST_BYTES,
      killOnDisconnect: true,
      outputSockets: hosting.outputSockets,
      packCache: hosting.packCache,
    },
  });
}

/**
 * `POST git-upload-pack`: the whole request is read first, then a fetch slot taken, then git runs —
 * so a client that sends slowly holds no slot and no git, only its connection.
 */
async function serveFetch(
  services: GitHttp,
  hosting: GitHosting,
  req: Request,
  res: Response,
  pace: ClientPace,
  exchange: GitExchange,
  fetch: { client: FetchClient; repositoryId: string; rpc: RpcOptions },
): Promise<void> {
  const body = await readRequestBody(req, res, pace, { maxBytes: fetch.rpc.maxBodyBytes, spoolDir: hosting.requestsDir });
  if (body === null) return; // gone while sending
  if (body instanceof DomainError) return sendGitAnswer(res, body);
  const gone = new AbortController();
  const leave = () => gone.abort();
  res.once('close', leave);
  if (res.destroyed) leave();
  try {
    // Listing refs (protocol v2 `ls-refs`) makes no pack: like the advertisement, it needs no slot.
    const listing = listsRefs(body.head, fetch.rpc.gitProtocol);
    if (listing) exchange.uncounted(); // part of the fetch that follows, like the advertisement
    const release = listing ? () => undefined : await hosting.fetchSlot(fetch.client, gone.signal);
    if (!release) return; // gave up while waiting for a slot
    try {
      const rpc = { ...fetch.rpc, body };
      const run = listing && body.whole ? await listRefs(req, res, rpc, body.whole) : await runRpc(req, res, rpc);
      exchange.ran(run);
      if (run.code !== 0 && run.signal !== 'SIGTERM') {
        services.log.warn({ repositoryId: fetch.repositoryId, code: run.code, stderr: run.stderr }, 'upload-pack failed');
      }
      finishGitResponse(res, run);
    } finally {
      release();
    }
  } finally {
    res.off('close', leave);
    await body.dispose();
  }
}

/** Whether a protocol v2 request is `command=ls-refs` (its first pkt-line). */
function listsRefs(head: Buffer, gitProtocol: string | undefined): boolean {
  if (!gitProtocol?.split(':').includes('version=2')) return false;
  const length = parseInt(head.subarray(0, 4).toString('latin1'), 16);
  return /^command=ls-refs\n?$/.test(head.subarray(4, length).toString('latin1'));
}

function parseGitRequest(req: Request, match: RegExpExecArray): GitRequest | DomainError {
  let owner: string;
  let repository: string;
  try {
    owner = decodeURIComponent(match[1]!);
    repository = decodeURIComponent(match[2]!);
  } catch {
    return new DomainError('NOT_FOUND', 'Repository not found.');
  }
  const name = repository.endsWith('.git') ? repository.slice(0, -4) : repository;
  // Names are looked up in the database, never joined into a path, but a name that cannot exist
  // (`..`, `%2F`, a NUL) is answered at once.
  if (!OWNER.test(owner) || !REPOSITORY.test(name) || name === '.' || name === '..') {
    return new DomainError('NOT_FOUND', 'Repository not found.');
  }

  const endpoint = match[3]!;
  if (endpoint === 'info/refs') {
    if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(req, 'GET');
    const requested = req.query.service;
    if (requested !== 'git-upload-pack' && requested !== 'git-receive-pack') {
      return new DomainError('SMART_HTTP_ONLY', 'Cairn serves the smart HTTP protocol only: use git 1.6.6 or newer.');
    }
    return { owner, name, service: requested.slice(4) as GitService, advertise: true };
  }
  const service = endpoint.slice(4) as GitService;
  if (req.method !== 'POST') return methodNotAllowed(req, 'POST');
  const contentType = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType !== `application/x-git-${service}-request`) {
    return new DomainError('UNSUPPORTED_MEDIA_TYPE', `Expected Content-Type application/x-git-${service}-request.`);
  }
  return { owner, name, service, advertise: false };
}

function methodNotAllowed(req: Request, allowed: string): DomainError {
  req.res?.setHeader('Allow', allowed);
  return new DomainError('METHOD_NOT_ALLOWED', `${req.method} is not allowed here (allowed: ${allowed}).`);
}
