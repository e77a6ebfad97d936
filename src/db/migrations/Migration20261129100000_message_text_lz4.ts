import { Migration } from '@mikro-orm/migrations';

// A message's text and HTML are compressed when its row passes ~2 KB, with pglz by default: for a 10 KB text message
// that was the costliest part of storing it, about 0.12 ms of PostgreSQL's CPU more than lz4 (the inbound store's
// write of a batch of 40 such messages, 0.29–0.33 ms per message with pglz, 0.15–0.21 with lz4, on Debian's
// PostgreSQL 15), for the same size on disk (2.9 KB a row either way). lz4 is used where the server was built with it
// (most are; the embedded cluster's build is not, and keeps pglz). Only new rows are affected; nothing is rewritten,
// and a value is read back with whichever method it was written with.

export class Migration20261129100000_message_text_lz4 extends Migration {

  override name = 'Migration20261129100000_message_text_lz4';

  override up(): void | Promise<void> {
    this.addSql(`do $$ begin
      if exists (select 1 from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)) then
        alter table "messages" alter column "text" set compression lz4, alter column "html" set compression lz4;
      end if;
    end $$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "messages" alter column "text" set compression default, alter column "html" set compression default;`);
  }

}
