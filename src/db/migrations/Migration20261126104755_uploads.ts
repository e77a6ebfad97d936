import { Migration } from '@mikro-orm/migrations';

// Uploads (src/uploads): files kept to attach to sends until they expire, their bytes in chunks.

export class Migration20261126104755_uploads extends Migration {

  override name = 'Migration20261126104755_uploads';

  override up(): void | Promise<void> {
    this.addSql(`create table "uploads" ("id" varchar(28) not null, "organization_id" uuid not null, "created_by_key_id" uuid not null, "source" varchar(10) not null, "source_url" text null, "filename" varchar(255) not null, "content_type" varchar(255) not null, "size" int not null, "sha256" varchar(64) not null, "scanned_at" timestamptz(3) not null, "created_at" timestamptz(3) not null, "expires_at" timestamptz(3) not null, primary key ("id"));`);
    this.addSql(`create index "uploads_organization_id_expires_at_index" on "uploads" ("organization_id", "expires_at");`);
    this.addSql(`create index "uploads_expires_at_index" on "uploads" ("expires_at");`);

    this.addSql(`create table "upload_chunks" ("upload_id" varchar(28) not null, "seq" int not null, "data" bytea not null, primary key ("upload_id", "seq"));`);

    this.addSql(`alter table "uploads" add constraint "uploads_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "upload_chunks" add constraint "upload_chunks_upload_id_foreign" foreign key ("upload_id") references "uploads" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "upload_chunks" drop constraint "upload_chunks_upload_id_foreign";`);

    this.addSql(`drop table if exists "uploads" cascade;`);
    this.addSql(`drop table if exists "upload_chunks" cascade;`);
  }

}
