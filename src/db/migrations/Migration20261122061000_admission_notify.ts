import { Migration } from '@mikro-orm/migrations';

// Inboxes and organizations announce every change on the `admission_changed` channel when its transaction commits,
// so smtp processes keep admissions cached until told otherwise (src/inbound/admission.ts). Generated from the
// entities' trigger definitions.
export class Migration20261122061000_admission_notify extends Migration {

  override name = 'Migration20261122061000_admission_notify';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function "organizations_organizations_admission_changed_fn"() returns trigger as $$ begin perform pg_notify('admission_changed', ''); return null; end; $$ language plpgsql;`);
    this.addSql(`create trigger "organizations_admission_changed" AFTER UPDATE OR DELETE on "organizations" for each STATEMENT execute function "organizations_organizations_admission_changed_fn"();`);
    this.addSql(`create or replace function "inboxes_inboxes_admission_changed_fn"() returns trigger as $$ begin perform pg_notify('admission_changed', ''); return null; end; $$ language plpgsql;`);
    this.addSql(`create trigger "inboxes_admission_changed" AFTER INSERT OR UPDATE OR DELETE on "inboxes" for each STATEMENT execute function "inboxes_inboxes_admission_changed_fn"();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "inboxes_admission_changed" on "inboxes";`);
    this.addSql(`drop function if exists "inboxes_inboxes_admission_changed_fn"();`);
    this.addSql(`drop trigger if exists "organizations_admission_changed" on "organizations";`);
    this.addSql(`drop function if exists "organizations_organizations_admission_changed_fn"();`);
  }

}
