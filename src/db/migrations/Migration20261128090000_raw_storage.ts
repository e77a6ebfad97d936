import { Migration } from '@mikro-orm/migrations';

// Received mail's raw bytes are kept only until the message is stored (minutes at most), then deleted: compressing
// them buys nothing. PostgreSQL tried pglz on every raw chunk (256 KB) and every raw message of more than ~2 KB, and
// on base64 text — most of a large message — it found enough matches to go on through the whole value, only to
// keep it uncompressed in the end. EXTERNAL keeps values out of line as before, uncompressed, without the attempt.
// Only new rows are affected; nothing is rewritten.

export class Migration20261128090000_raw_storage extends Migration {

  override name = 'Migration20261128090000_raw_storage';

  override up(): void | Promise<void> {
    this.addSql(`alter table "inbound_raw_chunks" alter column "data" set storage external;`);
    this.addSql(`alter table "inbound_raw_messages" alter column "raw" set storage external;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "inbound_raw_chunks" alter column "data" set storage extended;`);
    this.addSql(`alter table "inbound_raw_messages" alter column "raw" set storage extended;`);
  }

}
