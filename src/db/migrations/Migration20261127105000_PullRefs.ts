import { Migration } from '@mikro-orm/migrations';

/**
 * Pull refs (src/pulls/pull-refs.ts): pull requests opened before them have none. Their mergeability
 * is made stale once, so the check, at start-up, makes their merge refs and links their head refs
 * (a pull request never checked gets its head ref linked).
 */
export class Migration20261127105000_PullRefs extends Migration {
  override name = 'Migration20261127105000_PullRefs';

  override up(): void | Promise<void> {
    this.addSql(`update pull_requests set mergeable_base_sha = null, mergeable_head_sha = null where state = 'open';`);
  }

  override down(): void | Promise<void> {
    // Nothing to undo: the next check stores the pair again.
  }
}
