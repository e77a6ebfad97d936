import { Migration } from '@mikro-orm/migrations';

export class Migration20261122015500_submission_lookups extends Migration {

  override name = 'Migration20261122015500_submission_lookups';

  override up(): void | Promise<void> {
    this.addSql(`create index "submissions_inbox_id_index" on "submissions" ("inbox_id");`);
    this.addSql(`create index "submissions_internet_message_id_index" on "submissions" ("internet_message_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "submissions_internet_message_id_index";`);
    this.addSql(`drop index "submissions_inbox_id_index";`);
  }

}
