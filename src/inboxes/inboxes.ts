// Inboxes: creation (address rules, managed allowance, platform limit), reads, and deletion through a purge workflow.
import type { Principal } from "../auth/principal.js";
import { canAccessInbox, requireUnrestrictedInboxes } from "../auth/principal.js";
import { Inbox } from "../db/entities/index.js";
import type { InboxRow } from "../db/entities/inbox.js";
import type { TenantStore } from "../db/tenant-store.js";
import { Conflict, Gone, NotFound, PermissionDenied } from "../errors.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import type { CursorCodec } from "../pagination/cursor.js";
import { newestFirstRows, type Page, type PageRequest } from "../pagination/keyset.js";

/** Local parts no tenant may take on the managed domain: they belong to the service (RFC 2142 and common roles). */
const RESERVED_LOCAL_PARTS = new Set([
  "postmaster", "abuse", "hostmaster", "webmaster", "mailer-daemon", "noc", "security", "root", "admin",
  "administrator", "support", "noreply", "no-reply", "bounce", "bounces", "feedback",
]);

/** Starts the durable purge of a deleted inbox; idempotent per inbox. */
export interface InboxPurgeStarter {
  start(inbox: { id: string; organizationId: string }): Promise<void>;
}

/** The customer domains inboxes are created on (src/domains). */
export interface InboxDomains {
  /** The organization's domain: 404 when it is not one, 403 domain_not_verified unless its inbound capability holds. */
  requireInboundForInbox(store: TenantStore, domainId: string): Promise<{ readonly id: string; readonly domain: string }>;
}

export interface InboxesDeps {
  readonly managedDomain: string;
  readonly customerDomains: InboxDomains;
  readonly inboxLimit: number;
  readonly cursors: CursorCodec;
  readonly purges: InboxPurgeStarter;
  readonly log: Logger;
}

export interface CreateInboxInput {
  readonly localPart: string;
  readonly displayName: string;
  readonly domainId?: string | undefined;
}

export type Inboxes = ReturnType<typeof createInboxes>;

/** An inbox as the API shows it: what an entity has, and what the list reads as plain rows. */
export type InboxView = Pick<
  InboxRow,
  "id" | "localPart" | "domain" | "address" | "domainKind" | "domainId" | "displayName" | "status" | "createdAt" | "updatedAt"
>;

const INBOX_VIEW_COLUMNS = `id, local_part as "localPart", domain, address, domain_kind as "domainKind", domain_id as "domainId",
  display_name as "displayName", status, created_at as "createdAt", updated_at as "updatedAt"`;

export function createInboxes(deps: InboxesDeps) {
  async function findActive(store: TenantStore, principal: Principal, inboxId: string): Promise<InboxRow> {
    const inbox = canAccessInbox(principal, inboxId)
      ? await store.findOne(Inbox, { id: inboxId, status: "active" })
      : null;
    if (!inbox) throw new NotFound("inbox");
    return inbox;
  }

  /**
   * The inbox a read goes through. A page request with a cursor for an inbox deleted since is 410 (the cursor
   * outlived its resource); anything else that is not an active inbox of this key is 404.
   */
  async function findReadable(store: TenantStore, principal: Principal, inboxId: string, withCursor: boolean): Promise<InboxRow> {
    try {
      return await findActive(store, principal, inboxId);
    } catch (e) {
      if (withCursor && canAccessInbox(principal, inboxId) && (await store.count(Inbox, { id: inboxId })) > 0) {
        throw new Gone("cursor_expired", "the inbox this cursor belongs to has been deleted");
      }
      throw e;
    }
  }

  return {
    findActive,
    findReadable,

    async create(store: TenantStore, principal: Principal, input: CreateInboxInput): Promise<InboxRow> {
      requireUnrestrictedInboxes(principal, "create inboxes");
      // An inbox receives mail, so a customer domain must hold its inbound capability; it uses no managed allowance.
      const customer =
        input.domainId === undefined ? undefined : await deps.customerDomains.requireInboundForInbox(store, input.domainId);
      const localPart = input.localPart.toLowerCase();
      const domain = customer?.domain ?? deps.managedDomain;
      const address = `${localPart}@${domain}`;
      // The reserved names belong to the service on its managed domain; on a customer's domain they are the customer's.
      if (!customer && RESERVED_LOCAL_PARTS.has(localPart)) {
        throw new Conflict("inbox_address_unavailable", `the address ${address} is not available`);
      }
      const limit = {
        entity: Inbox,
        counted: { status: { $ne: "deleted" } },
        max: deps.inboxLimit,
        noun: "inboxes",
        errorCode: "inbox_limit_reached",
      };
      // Under the organization's lock, so the allowance cannot overshoot either. An address taken, by anyone and ever,
      // is the unique constraint's to decide (409 inbox_address_unavailable, src/db/unique-conflicts.ts).
      return store.createWithinLimit(limit, (tx, org) => {
        if (!customer && org.managedUsed >= org.managedLimit) {
          throw new PermissionDenied(
            `the lifetime allowance of ${org.managedLimit} managed addresses is used up`,
            "managed_allowance_exhausted",
          );
        }
        const now = new Date();
        if (!customer) {
          org.managedUsed += 1;
          org.updatedAt = now;
        }
        return tx.create(Inbox, {
          id: newId("inb"),
          localPart,
          domain,
          address,
          domainKind: customer ? "customer" : "managed",
          domainId: customer?.id ?? null,
          displayName: input.displayName,
          status: "active",
          createdAt: now,
          updatedAt: now,
          deletedAt: null,
        });
      });
    },

    /** Plain rows: the list is among the most frequent reads, and hydrating entities cost more than the query. */
    list(store: TenantStore, principal: Principal, page: PageRequest): Promise<Page<InboxView>> {
      const { inboxIds } = principal;
      return newestFirstRows<InboxView>(
        store,
        deps.cursors,
        {
          resource: "inboxes",
          table: "inboxes",
          columns: INBOX_VIEW_COLUMNS,
          where: (bind) => `status = 'active'${inboxIds === null ? "" : ` and id = any(${bind(inboxIds)})`}`,
        },
        page,
      );
    },

    async delete(store: TenantStore, principal: Principal, inboxId: string): Promise<void> {
      if (!canAccessInbox(principal, inboxId)) throw new NotFound("inbox");
      // One conditional update decides the race: a concurrent delete waits for this row, then finds it deleting
      // (409). It also waits for sends that hold the row (outbound acceptance locks it FOR SHARE), so none of
      // them commits after the purge has begun.
      const now = new Date();
      const marked = await store.sqlTransaction((tx) =>
        tx.query(
          `update inboxes set status = 'deleting', deleted_at = $3, updated_at = $3
            where id = $1 and organization_id = $2 and status = 'active' returning id`,
          [inboxId, tx.organizationId, now],
        ),
      );
      if (marked.length === 0) {
        if ((await store.count(Inbox, { id: inboxId, status: "deleting" })) > 0) {
          throw new Conflict("inbox_delete_in_progress", "the inbox is being deleted; its data is still being purged");
        }
        throw new NotFound("inbox");
      }
      // Committed, so the delete has happened: a purge that cannot start now (Temporal down) is started by the
      // purge reconciler from the `deleting` row.
      await deps.purges
        .start({ id: inboxId, organizationId: store.organizationId })
        .catch((e: unknown) => deps.log.warn("inbox purge not started; the reconciler will start it", { inboxId, error: e }));
    },
  };
}
