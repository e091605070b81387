import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CHROMIUM = '/usr/bin/chromium';

/**
 * Debian's chromium, for the tests that drive a real browser: installed with apt-get when missing
 * (once per machine: the package stays). Where that is impossible (no root, no apt, no mirror),
 * the reason instead, for the test to print and skip.
 */
export function systemChromium(): { path: string } | { reason: string } {
  if (existsSync(CHROMIUM)) return { path: CHROMIUM };
  const install = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
    encoding: 'utf8',
    timeout: 10 * 60_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (existsSync(CHROMIUM)) return { path: CHROMIUM };
  const why = install.error?.message ?? (install.stderr.trim().split('\n').pop() || `exit status ${install.status}`);
  return { reason: `no ${CHROMIUM}, and \`apt-get install -y chromium\` failed: ${why}` };
}
