import { Migration } from '@mikro-orm/migrations';

// Send windows are counted in shards (src/outbound/send-limits.ts): the shard joins the primary key. Existing rows
// become shard 0, so the windows running during the upgrade keep their counts.
export class Migration20261124100000_send_window_shards extends Migration {

  override name = 'Migration20261124100000_send_window_shards';

  override up(): void | Promise<void> {
    this.addSql(`alter table "send_windows" add column "shard" smallint not null default 0;`);
    this.addSql(`alter table "send_windows" drop constraint "send_windows_pkey";`);
    this.addSql(`alter table "send_windows" add constraint "send_windows_pkey" primary key ("organization_id", "kind", "window_start", "shard");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`delete from "send_windows" where "shard" <> 0;`);
    this.addSql(`alter table "send_windows" drop constraint "send_windows_pkey";`);
    this.addSql(`alter table "send_windows" add constraint "send_windows_pkey" primary key ("organization_id", "kind", "window_start");`);
    this.addSql(`alter table "send_windows" drop column "shard";`);
  }

}
