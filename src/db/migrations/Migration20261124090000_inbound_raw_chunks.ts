import { Migration } from '@mikro-orm/migrations';

// Large raw messages are committed in chunks (src/inbound/receive.ts), so no process holds one whole.
export class Migration20261124090000_inbound_raw_chunks extends Migration {

  override name = 'Migration20261124090000_inbound_raw_chunks';

  override up(): void | Promise<void> {
    this.addSql(`create table "inbound_raw_chunks" ("raw_message_id" uuid not null, "seq" int not null, "data" bytea not null, primary key ("raw_message_id", "seq"));`);
    this.addSql(`alter table "inbound_raw_chunks" add constraint "inbound_raw_chunks_raw_message_id_foreign" foreign key ("raw_message_id") references "inbound_raw_messages" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "inbound_raw_chunks" cascade;`);
  }

}
