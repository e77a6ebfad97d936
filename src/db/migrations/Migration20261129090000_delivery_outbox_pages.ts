import { Migration } from '@mikro-orm/migrations';

// The webhook outbox's rows are inserted `delivering` in their message's store transaction and updated once more
// when the attempt's answer comes (delivered, or pending for a retry). Two costs per row that nothing needs:
// - The update wrote each of the three indexes again (status is indexed, so no update is HOT) and, the new version
//   never fitting on the full page of its row, moved it to another page with a lock record first: 7 WAL records
//   per delivery besides the insert's 4 (bench:inbound-cpu BENCH_CPU_WAL=1). Pages filled to half keep the new
//   version on its row's page (one record, logged as the bytes that changed).
// - The status index held every row ever delivered, though its only readers (the reconciler, the bench's backlog)
//   look for pending and delivering rows: it now holds those alone, so a delivered row's version is not indexed in
//   it and the index stays as small as the backlog.
// Only new pages get the fill factor; nothing is rewritten. The index is built afresh (the table is locked
// against writes meanwhile: a plain CREATE INDEX, as migrations run in a transaction).

export class Migration20261129090000_delivery_outbox_pages extends Migration {

  override name = 'Migration20261129090000_delivery_outbox_pages';

  override up(): void | Promise<void> {
    this.addSql(`alter table "webhook_deliveries" set (fillfactor = 50);`);
    this.addSql(`drop index "webhook_deliveries_status_created_at_index";`);
    this.addSql(`create index "webhook_deliveries_open_status_created_at_index" on "webhook_deliveries" ("status", "created_at") where "status" in ('pending', 'delivering');`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "webhook_deliveries_open_status_created_at_index";`);
    this.addSql(`create index "webhook_deliveries_status_created_at_index" on "webhook_deliveries" ("status", "created_at");`);
    this.addSql(`alter table "webhook_deliveries" reset (fillfactor);`);
  }

}
