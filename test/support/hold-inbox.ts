// An inbox row held FOR UPDATE by a transaction of its own: processing cannot store mail for that inbox meanwhile,
// so accepted mail waits in hand (the backlog) until the hold is released.
import type { Database } from "../../src/db/database.js";

export async function holdInbox(db: Database, inboxId: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const holding = db.sql.transaction(async (tx) => {
    await tx.query(`select 1 from inboxes where id = $1 for update`, [inboxId]);
    locked();
    await released;
  });
  await isLocked;
  return {
    async release() {
      release();
      await holding;
    },
  };
}
