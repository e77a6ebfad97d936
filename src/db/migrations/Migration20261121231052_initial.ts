import { Migration } from '@mikro-orm/migrations';

export class Migration20261121231052_initial extends Migration {

  override name = 'Migration20261121231052_initial';

  override up(): void | Promise<void> {
    this.addSql(`create table "organizations" ("id" uuid not null, "name" varchar(200) not null, "status" varchar(20) not null default 'active', "messages_per_minute" int not null, "messages_per_day" int not null, "recipients_per_day" int not null, "managed_limit" int not null, "managed_used" int not null default 0, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, primary key ("id"));`);

    this.addSql(`create table "inboxes" ("id" varchar(28) not null, "organization_id" uuid not null, "local_part" varchar(64) not null, "domain" varchar(253) not null, "address" varchar(320) not null, "domain_kind" varchar(20) not null, "domain_id" uuid null, "display_name" varchar(200) not null, "status" varchar(20) not null default 'active', "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, "deleted_at" timestamptz(3) null, primary key ("id"));`);
    this.addSql(`alter table "inboxes" add constraint "inboxes_address_unique" unique ("address");`);
    this.addSql(`create index "inboxes_organization_id_created_at_id_index" on "inboxes" ("organization_id", "created_at", "id");`);

    this.addSql(`create table "api_keys" ("id" uuid not null, "organization_id" uuid not null, "kind" varchar(20) not null default 'agent', "lookup_id" varchar(32) not null, "secret_hash" varchar(64) not null, "previous_lookup_id" varchar(32) null, "previous_secret_hash" varchar(64) null, "previous_valid_until" timestamptz(3) null, "scopes" text[] not null, "inbox_ids" text[] null, "allowed_ips" text[] null, "send_mode" varchar(20) not null default 'new_and_reply', "allowed_recipient_domains" text[] null, "expires_at" timestamptz(3) null, "requests_per_minute" int not null, "revoked_at" timestamptz(3) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_lookup_id_unique" unique ("lookup_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_previous_lookup_id_unique" unique ("previous_lookup_id");`);

    this.addSql(`create table "request_windows" ("key_id" uuid not null, "window_start" timestamptz(0) not null, "count" int not null, primary key ("key_id", "window_start"));`);
    // Rate-limit counters need no WAL: a crash only resets the current window (see the RequestWindow entity).
    this.addSql(`alter table "request_windows" set unlogged;`);

    this.addSql(`alter table "inboxes" add constraint "inboxes_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "api_keys" add constraint "api_keys_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);
  }

}
