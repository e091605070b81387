import { Migration } from '@mikro-orm/migrations';

/**
 * The timeline of issues and pull requests, written from their events (conversations/timeline): one
 * row per thing a page shows, keyed by the or pull request's id, in the order they happened.
 * `repository_id` is a plain column, as in `domain_events`: a foreign key would take the repository
 * row's lock last in every change that records an event about an issue (after the row), the
 * reverse of the order a repository's deletion takes them in — a deadlock. A repository's deletion
 * deletes its items (by its event, timeline-listener.ts); a comment's item goes with its comment
 * (that key locks the comment, never the repository).
 */
export class Migration20261128130000_Timeline extends Migration {
  override name = 'Migration20261128130000_Timeline';

  override up(): void | Promise<void> {
    this.addSql(`create table "timeline_items" (
      "id" bigserial primary key,
      "repository_id" text not null,
      "conversation_id" text not null,
      "number" int not null,
      "kind" text not null,
      "actor" jsonb not null,
      "created_at" timestamptz not null,
      "comment_id" text null references "issue_comments" ("id") on delete cascade,
      "review_id" text null,
      "details" jsonb not null default '{}');`);
    this.addSql(`create index "timeline_items_conversation" on "timeline_items" ("conversation_id", "id");`);
    this.addSql(`create index "timeline_items_repository" on "timeline_items" ("repository_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "timeline_items";`);
  }
}
