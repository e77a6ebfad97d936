import { Migration } from '@mikro-orm/migrations';

export class Migration20261121232647_mailboxes extends Migration {

  override name = 'Migration20261121232647_mailboxes';

  override up(): void | Promise<void> {
    this.addSql(`create table "inbound_raw_messages" ("id" uuid not null, "received_at" timestamptz(3) not null, "mail_from" varchar(512) not null, "rcpt_to" text[] not null, "inbox_ids" text[] not null, "remote_ip" varchar(64) not null, "helo" varchar(512) not null, "tls_protocol" varchar(64) null, "tls_cipher" varchar(128) null, "size" int not null, "raw" bytea not null, "status" varchar(20) not null default 'pending', "attempts" int not null default 0, "error" text null, "processed_at" timestamptz(3) null, primary key ("id"));`);
    this.addSql(`create index "inbound_raw_messages_status_received_at_index" on "inbound_raw_messages" ("status", "received_at");`);

    this.addSql(`create table "messages" ("id" varchar(28) not null, "organization_id" uuid not null, "inbox_id" varchar(28) not null, "thread_id" varchar(28) not null, "direction" varchar(10) not null, "internet_message_id" varchar(998) not null, "in_reply_to" varchar(998) null, "references" text[] not null, "from" jsonb not null, "to" jsonb not null, "reply_to" jsonb null, "subject" text not null, "text" text not null, "html" text null, "metadata" jsonb not null, "delivery_status" varchar(20) not null, "submission_id" uuid null, "failure_code" varchar(64) null, "inbound_security" jsonb null, "attachments_scan_state" varchar(20) null, "raw_id" uuid null, "parse_problem" text null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "messages_thread_id_created_at_id_index" on "messages" ("thread_id", "created_at", "id");`);
    this.addSql(`create index "messages_inbox_id_created_at_id_index" on "messages" ("inbox_id", "created_at", "id");`);
    this.addSql(`create index "messages_inbox_id_internet_message_id_index" on "messages" ("inbox_id", "internet_message_id");`);
    this.addSql(`alter table "messages" add constraint "messages_raw_id_inbox_id_unique" unique ("raw_id", "inbox_id");`);

    this.addSql(`create table "customer_domains" ("id" uuid not null, "organization_id" uuid not null, "domain" varchar(253) not null, "ownership_token" varchar(64) not null, "dkim_selector" varchar(63) not null, "dkim_public_key" text not null, "dkim_private_key_encrypted" text not null, "inbound" jsonb not null, "outbound" jsonb not null, "last_checks" jsonb null, "last_checked_at" timestamptz(3) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "customer_domains_domain_index" on "customer_domains" ("domain");`);
    this.addSql(`create index "customer_domains_organization_id_created_at_id_index" on "customer_domains" ("organization_id", "created_at", "id");`);
    this.addSql(`alter table "customer_domains" add constraint "customer_domains_organization_id_domain_unique" unique ("organization_id", "domain");`);

    this.addSql(`create table "attachments" ("id" varchar(40) not null, "organization_id" uuid not null, "inbox_id" varchar(28) not null, "message_id" varchar(28) not null, "position" int not null, "filename" varchar(255) not null, "content_type" varchar(255) not null, "size" int not null, "content" bytea not null, "scan_state" varchar(20) not null default 'unscanned', "scan_detail" text null, "scanned_at" timestamptz(3) null, "created_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "attachments_message_id_index" on "attachments" ("message_id");`);
    this.addSql(`create index "attachments_inbox_id_index" on "attachments" ("inbox_id");`);

    this.addSql(`create table "threads" ("id" varchar(28) not null, "organization_id" uuid not null, "inbox_id" varchar(28) not null, "subject" text not null, "participants" text[] not null, "message_count" int not null default 0, "last_message_at" timestamptz(3) not null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "threads_inbox_id_last_message_at_id_index" on "threads" ("inbox_id", "last_message_at", "id");`);

    this.addSql(`create table "webhook_deliveries" ("id" uuid not null, "organization_id" uuid not null, "endpoint_id" varchar(28) not null, "event_id" varchar(28) not null, "event_type" varchar(64) not null, "payload" text not null, "status" varchar(20) not null default 'pending', "attempts" int not null default 0, "last_error" text null, "last_attempt_at" timestamptz(3) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "webhook_deliveries_status_created_at_index" on "webhook_deliveries" ("status", "created_at");`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_endpoint_id_event_id_unique" unique ("endpoint_id", "event_id");`);

    this.addSql(`create table "webhook_endpoints" ("id" varchar(28) not null, "organization_id" uuid not null, "url" varchar(2048) not null, "events" text[] not null, "status" varchar(20) not null default 'active', "signing_secret" varchar(128) not null, "signing_secret_replay_until" timestamptz(3) not null, "idempotency_key" varchar(200) not null, "request_hash" varchar(64) not null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, "deleted_at" timestamptz(3) null, primary key ("id"));`);
    this.addSql(`create index "webhook_endpoints_organization_id_created_at_id_index" on "webhook_endpoints" ("organization_id", "created_at", "id");`);
    this.addSql(`alter table "webhook_endpoints" add constraint "webhook_endpoints_organization_id_idempotency_key_unique" unique ("organization_id", "idempotency_key");`);
    // A URL is registered once per organization among live endpoints; deleted ones free it (spec rule 6 of Events).
    this.addSql(`create unique index "webhook_endpoints_live_url_unique" on "webhook_endpoints" ("organization_id", "url") where "status" = 'active';`);

    this.addSql(`alter table "messages" add constraint "messages_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "customer_domains" add constraint "customer_domains_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "attachments" add constraint "attachments_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "threads" add constraint "threads_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "webhook_endpoints" add constraint "webhook_endpoints_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "inbound_raw_messages" cascade;`);
    this.addSql(`drop table if exists "messages" cascade;`);
    this.addSql(`drop table if exists "customer_domains" cascade;`);
    this.addSql(`drop table if exists "attachments" cascade;`);
    this.addSql(`drop table if exists "threads" cascade;`);
    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);
  }

}
