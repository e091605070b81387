import fs from 'node:fs/promises';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { SCOPES } from '../principal.js';
import { generateToken } from './tokens.js';
import { User } from './user.entity.js';
import { issueToken } from './accounts.service.js';

const BOOTSTRAP_LOCK = 0x6361_6972; // "cair": one bootstrap even when several processes start together

/**
 * First start on an empty database: create the site admin `admin` with a
 * token holding every scope (CAIRN_ADMIN_TOKEN's value if set) and write the
 * token to `<dataDir>/admin-token`, readable by the owner only.
 */
export async function bootstrapAdmin(orm: MikroORM, config: Config, log: Logger): Promise<void> {
  const file = path.join(config.dataDir, 'admin-token');
  const secret = config.adminToken ?? generateToken();
  const created = await orm.em.fork().transactional(async (em) => {
    await em.execute('select pg_advisory_xact_lock(?)', [BOOTSTRAP_LOCK]);
    if ((await em.count(User, {})) > 0) return false;
    const admin = em.create(User, { login: 'admin', loginKey: 'admin', email: 'admin@localhost', admin: true });
    await issueToken(em, admin, 'bootstrap', [...SCOPES], null, secret);
    // Written before the commit: a crash after it cannot leave an admin whose token nobody has
    // (a crash before it leaves an empty database, and the next start bootstraps again).
    await fs.mkdir(config.dataDir, { recursive: true });
    await fs.writeFile(file, `${secret}\n`, { mode: 0o600 });
    await fs.chmod(file, 0o600);
    return true;
  });
  if (!created) return;
  log.info({ file }, 'created the site admin "admin"; its token is in this file');
}
