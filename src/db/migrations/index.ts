// Every committed migration, in order. Explicit imports instead of file discovery: what is imported is what runs.
import { Migration20261121231052_initial } from "./Migration20261121231052_initial.js";
import { Migration20261121232647_mailboxes } from "./Migration20261121232647_mailboxes.js";
import { Migration20261121233303_outbound } from "./Migration20261121233303_outbound.js";
import { Migration20261121235811_scan_backlog } from "./Migration20261121235811_scan_backlog.js";
import { Migration20261122015500_submission_lookups } from "./Migration20261122015500_submission_lookups.js";
import { Migration20261122061000_admission_notify } from "./Migration20261122061000_admission_notify.js";
import { Migration20261123193000_complaint_once } from "./Migration20261123193000_complaint_once.js";
import { Migration20261124100000_send_window_shards } from "./Migration20261124100000_send_window_shards.js";

import { Migration20261124090000_inbound_raw_chunks } from "./Migration20261124090000_inbound_raw_chunks.js";
import { Migration20261125100000_events } from "./Migration20261125100000_events.js";
import { Migration20261126104755_uploads } from "./Migration20261126104755_uploads.js";
import { Migration20261126130000_delivery_claims } from "./Migration20261126130000_delivery_claims.js";
import { Migration20261127100000_sender_trust } from "./Migration20261127100000_sender_trust.js";
import { Migration20261127120000_holds } from "./Migration20261127120000_holds.js";
import { Migration20261128090000_raw_storage } from "./Migration20261128090000_raw_storage.js";
import { Migration20261129090000_delivery_outbox_pages } from "./Migration20261129090000_delivery_outbox_pages.js";
import { Migration20261129100000_message_text_lz4 } from "./Migration20261129100000_message_text_lz4.js";

export const migrations = [
  Migration20261121231052_initial,
  Migration20261121232647_mailboxes,
  Migration20261121233303_outbound,
  Migration20261121235811_scan_backlog,
  Migration20261122015500_submission_lookups,
  Migration20261122061000_admission_notify,
  Migration20261123193000_complaint_once,
  Migration20261124090000_inbound_raw_chunks,
  Migration20261124100000_send_window_shards,
  Migration20261125100000_events,
  Migration20261126104755_uploads,
  Migration20261126130000_delivery_claims,
  Migration20261127100000_sender_trust,
  Migration20261127120000_holds,
  Migration20261128090000_raw_storage,
  Migration20261129090000_delivery_outbox_pages,
  Migration20261129100000_message_text_lz4,
];
