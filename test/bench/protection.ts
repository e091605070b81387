/**
 * `npm run bench:protection`: what a branch rule costs a push. One repository, one writer (not an
 * admin: admins bypass rules), two branches moving by one fast-forward commit per push: `main`
 * under a rule that makes git's hook ask the service about every push (no force-push, linear
 * history: the hook checks both with git in the push's quarantine) and `free` without a rule, the
 * two pushed in turns so the machine's drift falls on both. BENCH_PUSHES pushes each (40).
 *
 * Prints a table and a JSON line: medians, p90s, and the protected/unprotected ratio (target ≤ 1.10).
 */
import { adminClient, createUser } from '../support/client.js';
import { GitSandbox, remoteUrl } from '../support/git.js';
import { CairnServer } from '../support/server.js';
import { median, percentile } from './stats.js';

const PUSHES = Number(process.env.BENCH_PUSHES ?? 40);

const server = await CairnServer.start({ embedded: true, discardOutput: true });
const git = await GitSandbox.create();
try {
  const admin = adminClient(server);
  const owner = await createUser(admin, 'bench-owner');
  const dev = await createUser(admin, 'bench-dev');
  const created = await owner.post('/repos', { name: 'guarded' });
  const repoId = created.body.id as string;
  await owner.put(`/repos/${repoId}/collaborators/${dev.login}`, { permission: 'write' });
  const work = await git.init('work');
  await git.git(['remote', 'add', 'origin', remoteUrl(server, owner.login, 'guarded', dev.token)], { cwd: work });
  await git.commit(work, 'initial', { 'README.md': 'bench\n' });
  await git.git(['push', '--quiet', 'origin', 'main', 'main:free'], { cwd: work });
  const rule = await owner.put(`/repos/${repoId}/branches/main/protection`, { required_linear_history: true, allow_force_pushes: false });
  if (rule.status !== 200) throw new Error(`cannot protect main: ${rule.text}`);

  const timed = { protected: [] as number[], unprotected: [] as number[] };
  let n = 0;
  const push = async (branch: string): Promise<number> => {
    await git.git(['checkout', '--quiet', branch], { cwd: work });
    await git.commit(work, `change ${++n}`, { [`${branch}.txt`]: `${n}\n` });
    const started = performance.now();
    await git.git(['push', '--quiet', 'origin', branch], { cwd: work });
    return performance.now() - started;
  };
  await git.git(['branch', 'free', 'origin/free'], { cwd: work });
  for (let warm = 0; warm < 3; warm++) {
    await push('main');
    await push('free');
  }
  for (let i = 0; i < PUSHES; i++) {
    // Alternate which goes first, so neither always follows the other's maintenance or flush.
    const order = i % 2 ? (['main', 'free'] as const) : (['free', 'main'] as const);
    for (const branch of order) timed[branch === 'main' ? 'protected' : 'unprotected'].push(await push(branch));
  }
  const figures = {
    protectedMs: Math.round(median(timed.protected) * 10) / 10,
    unprotectedMs: Math.round(median(timed.unprotected) * 10) / 10,
    protectedP90Ms: Math.round(percentile(timed.protected, 90) * 10) / 10,
    unprotectedP90Ms: Math.round(percentile(timed.unprotected, 90) * 10) / 10,
    ratio: Math.round((median(timed.protected) / median(timed.unprotected)) * 1000) / 1000,
    pushes: PUSHES,
  };
  console.log('| push (one fast-forward commit, git client to recorded events) | median | p90 |');
  console.log('| --- | --- | --- |');
  console.log(`| protected branch (linear history, no force-push) | ${figures.protectedMs} ms | ${figures.protectedP90Ms} ms |`);
  console.log(`| unprotected branch | ${figures.unprotectedMs} ms | ${figures.unprotectedP90Ms} ms |`);
  console.log(`| protected / unprotected | **${figures.ratio}** (target ≤ 1.10) | |`);
  console.log(JSON.stringify({ bench: 'protection', ...figures }));
} finally {
  await server.destroy();
  await git.cleanup();
}
