import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Principal } from '../auth/principal.js';
import type { Services } from '../context.js';
import type { Repository } from '../repositories/repository.entity.js';
import { PUSH_REPORT_ENV } from './hooks.js';
import type { GitHosting } from './hosting.js';
import { finishGitResponse, sendGitError } from './http-answers.js';
import { beginPush, interruptedPush } from './journal.js';
import { recordRefChanges } from './record-push.js';
import { parseReport } from './ref-updates.js';
import { runRpc } from './transport.js';

/** How long a push waits for another push to the same repository to finish. */
const PUSH_LOCK_WAIT_MS = 10 * 60_000;
/** Room for the command list beside the pack (a mirror push of many refs) before the body is cut off. */
const COMMANDS_ALLOWANCE = 64 * 1024 * 1024;

/**
 * `POST git-receive-pack`: one push, start to finish.
 *
 * 1. Take the repository's push lock: pushes to one repository run one at a
 *    time across processes, so the refs on disk move only under this lock.
 * 2. If the journal holds a push that never finished recording, record its
 *    changes first (credited to its user).
 * 3. Journal this push, committed before git may move a ref.
 * 4. Run `git receive-pack --stateless-rpc` with Cairn's hooks; post-receive
 *    writes the exact `<old> <new> <ref>` lines of the push to a file.
 * 5. Record the events of those updates (and of anything else found changed
 *    on disk) with the new recorded refs, in one transaction that also
 *    clears the journal — and only then end the response, so a push the
 *    client saw succeed has its events. A crash anywhere leaves the journal
 *    row for reconciliation.
 */
export async function receivePack(
  services: Services,
  hosting: GitHosting,
  req: IncomingMessage,
  res: ServerResponse,
  repo: Repository,
  pusher: Principal,
  gitProtocol: string | undefined,
): Promise<void> {
  const gone = new AbortController();
  const onClose = () => gone.abort();
  res.once('close', onClose);
  if (res.destroyed) gone.abort(); // the client left while it was being authenticated
  const lock = await hosting.locks.acquire('push', repo.id, { waitMs: PUSH_LOCK_WAIT_MS, signal: gone.signal });
  if (!lock) {
    res.off('close', onClose);
    sendGitError(res, 503, 'Another push to this repository is still running; try again later.');
    return;
  }
  const report = path.join(hosting.reportsDir, `${repo.id}.${randomUUID()}`);
  try {
    if (gone.signal.aborted) return; // nobody is left to push: do not even start git
    const interrupted = await interruptedPush(lock.client, repo.id);
    if (interrupted) {
      await recordRefChanges(services, { repositoryId: repo.id, reported: [], pusher: null, interruptedUserId: interrupted.userId });
    }
    await beginPush(lock.client, repo.id, pusher.userId);

    const started = performance.now();
    const run = await runRpc(req, res, {
      service: 'receive-pack',
      dir: services.git.pathFor(repo.id),
      config: [
        `core.hooksPath=${hosting.hooksDir}`,
        // git refuses a larger pack itself, with a message the client prints.
        `receive.maxInputSize=${services.config.gitMaxPushSize}`,
        'receive.fsckObjects=true', // malformed or hostile objects never enter a repository...
        'receive.fsck.zeroPaddedFilemode=ignore', // ...but old histories with this harmless quirk still push
        // Deleting the branch HEAD names (the default branch) is refused, as on GitHub, without
        // git's advice about server settings the pusher cannot change.
        'receive.denyDeleteCurrent=refuse',
      ],
      env: { [PUSH_REPORT_ENV]: report },
      gitProtocol,
      maxBodyBytes: services.config.gitMaxPushSize + COMMANDS_ALLOWANCE,
      killOnDisconnect: false,
    });
    const received = performance.now();
    if (run.code !== 0) services.log.warn({ repositoryId: repo.id, code: run.code, stderr: run.stderr }, 'receive-pack failed');

    const reported = parseReport(await fs.readFile(report, 'utf8').catch(() => ''));
    const outcome = await recordRefChanges(services, {
      repositoryId: repo.id,
      reported,
      pusher: { id: pusher.userId, login: pusher.login, email: pusher.email },
      interruptedUserId: null,
    });
    finishGitResponse(res, run);
    services.log.info(
      {
        repositoryId: repo.id,
        refs: outcome.updates.length,
        receiveMs: Math.round(received - started),
        recordMs: Math.round(performance.now() - received),
      },
      'push processed',
    );
    if (outcome.updates.length) hosting.pushed(repo.id);
  } catch (error) {
    services.log.error({ err: error, repositoryId: repo.id }, 'push failed');
    // Never let a push whose events are not recorded look successful; reconciliation records them.
    if (!res.headersSent) sendGitError(res, 500, 'The push could not be recorded; try again.');
    else res.destroy();
  } finally {
    res.off('close', onClose);
    await Promise.all([fs.rm(report, { force: true }), fs.rm(`${report}.tmp`, { force: true })]).catch(() => undefined);
    await lock.release();
  }
}
