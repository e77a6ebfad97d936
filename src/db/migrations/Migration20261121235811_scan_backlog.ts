import { Migration } from '@mikro-orm/migrations';

export class Migration20261121235811_scan_backlog extends Migration {

  override name = 'Migration20261121235811_scan_backlog';

  override up(): void | Promise<void> {
    this.addSql(`create index "attachments_unscanned_created_at_index" on "attachments" ("created_at") where "scan_state" = 'unscanned';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "attachments_unscanned_created_at_index";`);
  }

}
