import { Migration } from '@mikro-orm/migrations';

// Issue 17's second half: Cc kept on messages, each recipient's kind (to, cc, bcc), sends held for a person's
// decision (holdFor on organizations and keys; the submission's reason, sending key and decision), events without an
// inbox (submission.held of /v1/send), and the addresses each own address exchanged mail with (contacts), filled here
// from the mail already stored: the senders of inbound mail and the To recipients of outbound mail.

export class Migration20261127120000_holds extends Migration {

  override name = 'Migration20261127120000_holds';

  override up(): void | Promise<void> {
    this.addSql(`create table "contacts" ("organization_id" uuid not null, "own_address" varchar(320) not null, "address" varchar(320) not null, "domain" varchar(253) not null, "created_at" timestamptz(3) not null, primary key ("organization_id", "own_address", "address"));`);
    this.addSql(`create index "contacts_organization_id_own_address_domain_index" on "contacts" ("organization_id", "own_address", "domain");`);

    this.addSql(`alter table "organizations" add "hold_for" varchar(20) not null default 'none';`);

    this.addSql(`alter table "messages" add "cc" jsonb not null default '[]';`);

    this.addSql(`alter table "api_keys" add "hold_for" varchar(20) null;`);

    this.addSql(`alter table "events" alter column "inbox_id" drop not null;`);

    this.addSql(`alter table "submissions" add "held_reason" varchar(20) null, add "created_by_key_id" uuid null, add "decided_at" timestamptz(3) null, add "decided_by_key_id" uuid null;`);
    this.addSql(`create index "submissions_organization_id_status_created_at_index" on "submissions" ("organization_id", "status", "created_at");`);

    this.addSql(`alter table "submission_recipients" add "kind" varchar(3) not null default 'to';`);

    this.addSql(`alter table "contacts" add constraint "contacts_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`insert into "contacts" ("organization_id", "own_address", "address", "domain", "created_at")
      select c.organization_id, c.own_address, c.address, left(split_part(c.address, '@', 2), 253), min(c.created_at)
        from (select m.organization_id, i.address as own_address, lower(m."from"->>'email') as address, m.created_at
                from "messages" m join "inboxes" i on i.id = m.inbox_id where m.direction = 'inbound'
              union all
              select m.organization_id, i.address, lower(t->>'email'), m.created_at
                from "messages" m join "inboxes" i on i.id = m.inbox_id, jsonb_array_elements(m."to") as t
               where m.direction = 'outbound') as c
       where c.address like '_%@_%' and length(c.address) <= 320
       group by c.organization_id, c.own_address, c.address
      on conflict do nothing;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "contacts" cascade;`);

    this.addSql(`alter table "api_keys" drop column "hold_for";`);

    this.addSql(`alter table "events" alter column "inbox_id" set not null;`);

    this.addSql(`alter table "messages" drop column "cc";`);

    this.addSql(`alter table "organizations" drop column "hold_for";`);

    this.addSql(`alter table "submission_recipients" drop column "kind";`);

    this.addSql(`drop index "submissions_organization_id_status_created_at_index";`);
    this.addSql(`alter table "submissions" drop column "held_reason", drop column "created_by_key_id", drop column "decided_at", drop column "decided_by_key_id";`);
  }

}
