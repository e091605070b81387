import { createHmac } from 'node:crypto';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { Receiver } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * A push with the real git client, end to end to a webhook receiver: the
 * events git produces travel the same outbox path as every other change.
 */
test('git push delivers signed push, branch_create and tag_create webhooks', async () => {
  const [server, receiver, sandbox] = await Promise.all([
    CairnServer.start({ env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' } }),
    Receiver.start(),
    GitSandbox.create(),
  ]);
  try {
    const owner = await createUser(adminClient(server), 'pusher', ['repo', 'admin:repo_hook']);
    const repo = (await owner.post('/repos', { name: 'pushed' })).body;
    await owner.post(`/repos/${repo.id}/webhooks`, {
      url: receiver.url('/git'),
      events: ['push', 'branch_create', 'tag_create'],
      secret: 'git-secret',
    });

    const work = await sandbox.init('work');
    const first = await sandbox.commit(work, 'first', { 'README.md': '# pushed\n' });
    const second = await sandbox.commit(work, 'second', { 'src/app.js': 'console.log(1)\n' });
    await sandbox.git(['tag', 'v1.0.0'], { cwd: work });
    const pushed = Date.now();
    await sandbox.git(['push', '--quiet', remoteUrl(server, 'pusher', 'pushed', owner.token), 'main', 'v1.0.0'], { cwd: work });

    const got = await receiver.waitFor('/git', 4);
    expect(got[0]!.at - pushed).toBeLessThan(5_000);
    const byEvent = (event: string, ref: string) => got.find((r) => r.headers['x-cairn-event'] === event && r.body.ref === ref)!;
    for (const r of got) {
      const expected = `sha256=${createHmac('sha256', 'git-secret').update(r.raw).digest('hex')}`;
      expect(r.headers['x-cairn-signature-256']).toBe(expected);
    }
    const push = byEvent('push', 'refs/heads/main');
    expect(push.body).toMatchObject({
      event: 'push',
      ref: 'refs/heads/main',
      before: '0'.repeat(40),
      after: second,
      created: true,
      deleted: false,
      forced: false,
      total_commits: 2,
      pusher: { name: 'pusher', email: 'pusher@example.test' },
      repository: { id: repo.id, full_name: 'pusher/pushed' },
      sender: { id: owner.userId, login: 'pusher' },
    });
    expect(push.body.commits.map((c: { id: string }) => c.id)).toEqual([first, second]);
    expect(push.body.commits[1]).toMatchObject({ message: 'second', added: ['src/app.js'], modified: [], removed: [] });
    expect(byEvent('branch_create', 'refs/heads/main').body).toMatchObject({ ref_name: 'main', ref_type: 'branch', sha: second });
    expect(byEvent('tag_create', 'refs/tags/v1.0.0').body).toMatchObject({ ref_name: 'v1.0.0', ref_type: 'tag' });
    expect(byEvent('push', 'refs/tags/v1.0.0')).toBeDefined();
  } finally {
    await sandbox.cleanup();
    await receiver.close();
    await server.destroy();
  }
});
