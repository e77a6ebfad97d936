import { Migration } from '@mikro-orm/migrations';

// A complaint is recorded once per submission and recipient (src/outbound/feedback-reports.ts inserts with
// ON CONFLICT DO NOTHING). Repeats recorded before keep their earliest row.
export class Migration20261123193000_complaint_once extends Migration {

  override name = 'Migration20261123193000_complaint_once';

  override up(): void | Promise<void> {
    this.addSql(`delete from "complaints" c using "complaints" earlier where c."submission_id" = earlier."submission_id" and c."email" = earlier."email" and (earlier."created_at", earlier."id") < (c."created_at", c."id");`);
    this.addSql(`alter table "complaints" add constraint "complaints_submission_id_email_unique" unique ("submission_id", "email");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "complaints" drop constraint "complaints_submission_id_email_unique";`);
  }

}
