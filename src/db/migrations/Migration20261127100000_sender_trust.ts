import { Migration } from '@mikro-orm/migrations';

// Sender trust (issue 16): whether each inbound message's sender authenticated (DMARC), kept apart for filters, and
// in its message.received event for streams; sender rules per inbox and per organization, and what they refused.
// Messages and events stored before it keep null (not evaluated) and are not blocked.

export class Migration20261127100000_sender_trust extends Migration {

  override name = 'Migration20261127100000_sender_trust';

  override up(): void | Promise<void> {
    this.addSql(`create table "sender_rules" ("id" uuid not null, "organization_id" uuid not null, "inbox_id" varchar(28) null, "allow" text[] not null, "block" text[] not null, "require_authenticated" boolean not null, "updated_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create unique index "sender_rules_scope_unique" on "sender_rules" ("organization_id", "inbox_id") nulls not distinct;`);
    this.addSql(`alter table "sender_rules" add constraint "sender_rules_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "messages" add "sender_authenticated" boolean null, add "sender_blocked" boolean not null default false;`);
    this.addSql(`create index "messages_authenticated_inbox_index" on "messages" ("inbox_id", "created_at", "id") where "sender_authenticated";`);
    this.addSql(`create index "messages_authenticated_thread_index" on "messages" ("thread_id") where "sender_authenticated";`);

    this.addSql(`alter table "threads" add "blocked" boolean not null default false;`);

    this.addSql(`alter table "events" add "sender_authenticated" boolean null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "sender_rules" cascade;`);
    this.addSql(`drop index "messages_authenticated_thread_index";`);
    this.addSql(`drop index "messages_authenticated_inbox_index";`);
    this.addSql(`alter table "messages" drop column "sender_blocked", drop column "sender_authenticated";`);
    this.addSql(`alter table "threads" drop column "blocked";`);
    this.addSql(`alter table "events" drop column "sender_authenticated";`);
  }

}
