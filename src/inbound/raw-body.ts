// A received message's bytes while DATA streams in, so that what senders send never decides how much memory the
// process takes: a message is kept in memory only while it is small (SPOOL_AFTER_BYTES) and the process's receive
// budget (SMTP_RECEIVE_MEMORY_BYTES, shared by every session) has room for it; otherwise what it has so far and the
// rest go to a spool file under DATA_DIR as they arrive. The file is unlinked as soon as it is opened: only its
// descriptor names it, so a crash or a forgotten close leaves nothing behind on disk.
import { randomUUID } from "node:crypto";
import { mkdir, open, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";

/** A message larger than this is spooled whatever the budget: it would take a large share of it. */
export const SPOOL_AFTER_BYTES = 1024 * 1024;

/** Bytes of DATA held in memory by one process, across its sessions. */
export interface ReceiveMemory {
  /** Takes `bytes` of the budget if it has room for them. */
  take(bytes: number): boolean;
  release(bytes: number): void;
}

export function createReceiveMemory(limitBytes: number): ReceiveMemory {
  let used = 0;
  return {
    take(bytes) {
      if (used + bytes > limitBytes) return false;
      used += bytes;
      return true;
    },
    release(bytes) {
      used -= bytes;
    },
  };
}

/** A whole message's bytes: in memory (a share of the receive budget) or in an unlinked spool file. */
export type RawBody =
  | { readonly kind: "memory"; readonly bytes: Buffer; readonly size: number; dispose(): Promise<void> }
  | { readonly kind: "file"; readonly file: FileHandle; readonly size: number; dispose(): Promise<void> };

export interface RawBodyWriter {
  /** Adds a chunk; resolves once it is kept (written, when spooling, so the sender waits for the disk). */
  write(chunk: Buffer): Promise<void>;
  /** The whole body; the writer's memory or file now belongs to it. Rejects when the spool could not be written. */
  finish(): Promise<RawBody>;
  /** Drops what was kept. */
  discard(): Promise<void>;
}

export interface RawBodies {
  /** A writer for the next message's DATA. */
  start(): RawBodyWriter;
}

/** Where spool files go (DATA_DIR/smtp-spool), made at start; each file is unlinked once open. */
export async function createRawBodies(memory: ReceiveMemory, dataDir: string): Promise<RawBodies> {
  const dir = join(dataDir, "smtp-spool");
  await mkdir(dir, { recursive: true, mode: 0o700 });

  async function spoolFile(): Promise<FileHandle> {
    const path = join(dir, `${randomUUID()}.eml`);
    const file = await open(path, "wx+", 0o600);
    await unlink(path).catch(async (e: unknown) => {
      await file.close();
      throw e;
    });
    return file;
  }

  return {
    start() {
      let chunks: Buffer[] = [];
      let held = 0;
      let size = 0;
      let file: Promise<FileHandle> | null = null;
      let failure: unknown = null;

      const releaseMemory = () => {
        memory.release(held);
        held = 0;
        chunks = [];
      };
      const closeFile = async () => {
        const opened = file;
        file = null;
        await opened?.then((f) => f.close()).catch(() => undefined);
      };

      async function spool(chunk: Buffer): Promise<void> {
        if (failure !== null) return;
        try {
          if (!file) {
            file = spoolFile();
            const pending = chunks;
            releaseMemory();
            for (const c of pending) await writeAll(await file, c);
          }
          await writeAll(await file, chunk);
        } catch (e) {
          // The rest of DATA is still read (SMTP answers only after the final dot); finish() reports the failure.
          failure = e;
          releaseMemory();
          await closeFile();
        }
      }

      return {
        async write(chunk) {
          size += chunk.length;
          if (!file && failure === null && size <= SPOOL_AFTER_BYTES && memory.take(chunk.length)) {
            held += chunk.length;
            chunks.push(chunk);
            return;
          }
          await spool(chunk);
        },
        async finish() {
          if (failure !== null) throw failure;
          if (file) {
            const handle = await file;
            file = null;
            return { kind: "file", file: handle, size, dispose: () => handle.close().catch(() => undefined) };
          }
          const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, held);
          const reserved = held;
          chunks = [];
          held = 0;
          let disposed = false;
          return {
            kind: "memory",
            bytes,
            size,
            async dispose() {
              if (disposed) return;
              disposed = true;
              memory.release(reserved);
            },
          };
        },
        async discard() {
          releaseMemory();
          await closeFile();
        },
      };
    },
  };
}

async function writeAll(file: FileHandle, chunk: Buffer): Promise<void> {
  for (let offset = 0; offset < chunk.length; ) offset += (await file.write(chunk, offset)).bytesWritten;
}
