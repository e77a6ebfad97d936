import { Migration } from '@mikro-orm/migrations';

// Each submission names the task queue of the deployment that accepted it, so only that deployment's workers claim,
// take over and reconcile it; rows accepted before keep null, which every deployment's reconciler may start (as
// before). claim_expires_at is the delivery queue's lease: set while a worker holds the submission without a
// workflow, so the survivors of a killed worker take it over once it runs out. The partial index holds only those.
export class Migration20261126130000_delivery_claims extends Migration {

  override name = 'Migration20261126130000_delivery_claims';

  override up(): void | Promise<void> {
    this.addSql(`alter table "submissions" add column "task_queue" varchar(255) null, add column "claim_expires_at" timestamptz(3) null;`);
    this.addSql(`create index "submissions_claim_expires_at_index" on "submissions" ("task_queue", "claim_expires_at") where "claim_expires_at" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "submissions_claim_expires_at_index";`);
    this.addSql(`alter table "submissions" drop column "claim_expires_at", drop column "task_queue";`);
  }

}
