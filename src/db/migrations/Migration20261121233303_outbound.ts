import { Migration } from '@mikro-orm/migrations';

export class Migration20261121233303_outbound extends Migration {

  override name = 'Migration20261121233303_outbound';

  override up(): void | Promise<void> {
    this.addSql(`create table "idempotency_records" ("id" uuid not null, "organization_id" uuid not null, "route" varchar(32) not null, "key" varchar(200) not null, "request_hash" varchar(64) not null, "status" varchar(20) not null, "submission_id" uuid null, "message_id" varchar(28) null, "created_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`alter table "idempotency_records" add constraint "idempotency_records_organization_id_route_key_unique" unique ("organization_id", "route", "key");`);

    this.addSql(`create table "complaints" ("id" uuid not null, "organization_id" uuid not null, "email" varchar(320) not null, "feedback_type" varchar(64) not null, "submission_id" uuid null, "user_agent" varchar(255) null, "created_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "complaints_organization_id_created_at_id_index" on "complaints" ("organization_id", "created_at", "id");`);

    this.addSql(`create table "send_windows" ("organization_id" uuid not null, "kind" varchar(10) not null, "window_start" timestamptz(0) not null, "messages" int not null, "recipients" int not null, primary key ("organization_id", "kind", "window_start"));`);

    this.addSql(`create table "submissions" ("id" uuid not null, "organization_id" uuid not null, "inbox_id" varchar(28) null, "message_id" varchar(28) null, "from" jsonb not null, "subject" text not null, "metadata" jsonb not null, "internet_message_id" varchar(998) not null, "mime" bytea not null, "status" varchar(30) not null default 'pending', "queue_id" varchar(64) null, "response" text null, "failure_code" varchar(64) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "submissions_organization_id_created_at_index" on "submissions" ("organization_id", "created_at");`);
    this.addSql(`create index "submissions_status_created_at_index" on "submissions" ("status", "created_at");`);

    this.addSql(`create table "submission_recipients" ("id" uuid not null, "organization_id" uuid not null, "submission_id" uuid not null, "position" int not null, "email" varchar(320) not null, "name" varchar(200) null, "domain" varchar(253) not null, "status" varchar(20) not null default 'pending', "response" text null, "failure_code" varchar(64) null, "attempts" int not null default 0, "delivered_at" timestamptz(3) null, "updated_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "submission_recipients_organization_id_updated_at_index" on "submission_recipients" ("organization_id", "updated_at");`);
    this.addSql(`alter table "submission_recipients" add constraint "submission_recipients_submission_id_position_unique" unique ("submission_id", "position");`);

    this.addSql(`create table "suppressions" ("id" uuid not null, "organization_id" uuid not null, "email" varchar(320) not null, "reason" varchar(20) not null, "detail" text null, "created_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "suppressions_organization_id_created_at_id_index" on "suppressions" ("organization_id", "created_at", "id");`);
    this.addSql(`alter table "suppressions" add constraint "suppressions_organization_id_email_unique" unique ("organization_id", "email");`);

    this.addSql(`alter table "idempotency_records" add constraint "idempotency_records_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "complaints" add constraint "complaints_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "submissions" add constraint "submissions_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "submission_recipients" add constraint "submission_recipients_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "suppressions" add constraint "suppressions_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "idempotency_records" cascade;`);
    this.addSql(`drop table if exists "complaints" cascade;`);
    this.addSql(`drop table if exists "send_windows" cascade;`);
    this.addSql(`drop table if exists "submissions" cascade;`);
    this.addSql(`drop table if exists "submission_recipients" cascade;`);
    this.addSql(`drop table if exists "suppressions" cascade;`);
  }

}
