import { Migration } from '@mikro-orm/migrations';

// The event log (src/events/log.ts) and what extraction read out of each inbound message (src/extraction). Inbound
// messages stored before it keep extracted null.

export class Migration20261125100000_events extends Migration {

  override name = 'Migration20261125100000_events';

  override up(): void | Promise<void> {
    this.addSql(`create table "events" ("id" varchar(28) not null, "seq" bigserial, "organization_id" uuid not null, "inbox_id" varchar(28) not null, "type" varchar(64) not null, "payload" text not null, "created_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "events_organization_id_seq_index" on "events" ("organization_id", "seq");`);
    this.addSql(`create index "events_created_at_index" on "events" ("created_at");`);

    this.addSql(`alter table "messages" add "extracted" jsonb null;`);

    this.addSql(`alter table "events" add constraint "events_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "events" cascade;`);

    this.addSql(`alter table "messages" drop column "extracted";`);
  }

}
