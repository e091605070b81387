import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Principal } from '../../principal.js';
import { DomainError } from '../../errors/domain-error.js';
import type { Repository } from '../../repositories/repository.entity.js';
import { PUSH_DETAILS_ENV, PUSH_REPORT_ENV } from '../hooks.js';
import type { GitExchange } from './git-metrics.js';
import type { GitHosting } from './hosting.js';
import type { GitHttp } from './git-http.js';
import { finishGitResponse, sendGitAnswer } from './http-answers.js';
import { NO_PUSH_DETAILS, readPushDetails } from '../refs/push-details.js';
import { parseReport } from '../refs/ref-updates.js';
import { runRpc, type ServiceRun } from './transport.js';

/** How long a push waits for another push to the same repository to finish. */
const PUSH_LOCK_WAIT_MS = 10 * 60_000;
/** Room for the command list beside the pack (a mirror push of many refs) before the body is cut off. */
const COMMANDS_ALLOWANCE = 64 * 1024 * 1024;

/**
 * However slowly it is sent, a push holds its repository at most CAIRN_GIT_PUSH_TIMEOUT from taking
 * its lock: past that receive-pack is stopped (and what it wrote recorded, as always), and the lock let go.
 */
function pushDeadline(lockedAt: number, timeoutMs: number) {
  const minutes = timeoutMs >= 60_000 ? `${Math.round(timeoutMs / 60_000)} minutes` : `${Math.round(timeoutMs / 1000)} seconds`;
  const error = new DomainError('REQUEST_TIMEOUT', `The push took longer than ${minutes}, the longest a push may take, and was stopped.`);
  return { at: lockedAt + timeoutMs, error };
}

/**
 * `POST git-receive-pack`: one push, start to finish, as a ref transaction
 * (ref-transaction.ts): under the repository's push lock and journal, git's
 * `receive-pack --stateless-rpc` runs with Cairn's hooks and post-receive
 * writes the exact `<old> <new> <ref>` lines of the push to a file; the
 * events of those updates (and of anything else found changed on disk) are
 * recorded in one transaction — and only then does the response end, so a
 * push the client saw succeed has its events.
 */
export async function receivePack(
  services: Pick<GitHttp, 'refs' | 'git' | 'config' | 'log'>,
  hosting: GitHosting,
  req: IncomingMessage,
  res: ServerResponse,
  repo: Repository,
  pusher: Principal,
  gitProtocol: string | undefined,
  exchange: GitExchange,
): Promise<void> {
  const gone = new AbortController();
  const onClose = () => gone.abort();
  res.once('close', onClose);
  if (res.destroyed) gone.abort(); // the client left while it was being authenticated
  const pushId = randomUUID();
  const report = path.join(hosting.reportsDir, `${repo.id}.${pushId}`);
  // In the repository's directory, which every process reads: a push its process died in is recorded with them.
  const detailsName = `cairn-push.${pushId}`;
  const details = path.join(services.git.pathFor(repo.id), detailsName);
  let run = null as ServiceRun | null; // set inside the ref transaction's callback
  let received = 0;
  /** Whether the push's journal entry may still need its details: it failed after refs may have moved. */
  let unrecorded = false;
  const started = performance.now();
  try {
    const outcome = await services.refs.update({
      repositoryId: repo.id,
      actor: { id: pusher.userId, login: pusher.login, email: pusher.gitEmail },
      waitMs: PUSH_LOCK_WAIT_MS,
      signal: gone.signal,
      pushDetails: detailsName,
      write: async ({ lockedAt, fence }) => {
        if (gone.signal.aborted) return { updates: [], details: NO_PUSH_DETAILS }; // nobody is left to push: do not even start git
        run = await runRpc(req, res, {
          service: 'receive-pack',
          dir: services.git.pathFor(repo.id),
          config: [
            ...fence.config, // Cairn's hooks (core.hooksPath), the fence among them
            // git refuses a larger pack itself, with a message the client prints.
            `receive.maxInputSize=${services.config.gitMaxPushSize}`,
            // A push is kept as the pack it came in (maintenance merges packs), never unpacked into loose
            // objects, which git compresses again, and packs again for every clone.
            'receive.unpackLimit=1',
            'receive.fsckObjects=true', // malformed or hostile objects never enter a repository...
            'receive.fsck.zeroPaddedFilemode=ignore', // ...but old histories with this harmless quirk still push
            // Deleting the branch HEAD names (the default branch) is refused, as on GitHub, without
            // git's advice about server settings the pusher cannot change.
            'receive.denyDeleteCurrent=refuse',
            // Pull refs are the service's (pull-refs.ts): a push never sees them, and git refuses any command on
            // them before a hook runs — a deletion would otherwise go through `refs/pull/<n>/head`, a symbolic
            // ref, to the branch it names.
            'receive.hideRefs=refs/pull/',
            // Garbage collection is the maintenance job's, under the repository's maintenance lock (which a
            // backup also takes), never git's own `gc --auto` after a push.
            'receive.autogc=false',
          ],
          env: { ...fence.env, [PUSH_REPORT_ENV]: report, [PUSH_DETAILS_ENV]: details },
          gitProtocol,
          maxBodyBytes: services.config.gitMaxPushSize + COMMANDS_ALLOWANCE,
          killOnDisconnect: false,
          deadline: pushDeadline(lockedAt, services.config.gitBounds.pushTimeoutMs),
        });
        received = performance.now();
        exchange.ran(run);
        if (run.code !== 0) services.log.warn({ repositoryId: repo.id, code: run.code, stderr: run.stderr }, 'receive-pack failed');
        const [updates, said] = await Promise.all([fs.readFile(report, 'utf8').catch(() => ''), readPushDetails(details)]);
        return { updates: parseReport(updates), details: said };
      },
    });
    if (!outcome) {
      sendGitAnswer(res, new DomainError('BUSY', 'Another push to this repository is still running; try again later.'));
      return;
    }
    if (run) {
      // receive-pack that died (`fatal`, a signal) after its answer began sent no report of the refs:
      // a response ended as if whole leaves git's client waiting for that report for ever; one cut off fails it.
      if (run.responded && run.code !== 0) res.destroy();
      else finishGitResponse(res, run);
    }
    services.log.info(
      {
        repositoryId: repo.id,
        refs: outcome.updates.length,
        receiveMs: Math.round((received || started) - started),
        recordMs: Math.round(performance.now() - (received || started)),
      },
      'push processed',
    );
  } catch (error) {
    if (error instanceof DomainError && error.code === 'NOT_FOUND') {
      // The repository was deleted while this push waited for its turn.
      if (!res.headersSent) sendGitAnswer(res, error);
      else res.destroy();
      return;
    }
    services.log.error({ err: error, repositoryId: repo.id }, 'push failed');
    unrecorded = true;
    // Never let a push whose events are not recorded look successful; the journal makes the next change record them.
    if (!res.headersSent) sendGitAnswer(res, new DomainError('INTERNAL', 'The push could not be recorded; try again.'));
    else res.destroy();
  } finally {
    res.off('close', onClose);
    // The details of a push left unrecorded stay for the change that records it from the journal, which removes them.
    const done = unrecorded ? [report, `${report}.tmp`] : [report, `${report}.tmp`, details, `${details}.tmp`];
    await Promise.all(done.map((file) => fs.rm(file, { force: true }))).catch(() => undefined);
  }
}
