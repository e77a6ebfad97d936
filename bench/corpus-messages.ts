// Every fixture of the extraction and safety corpora (test/fixtures/extraction, test/fixtures/safety: plain text,
// HTML newsletters, replies with quotes, codes, links, hostile mail), each composed into a MIME message (text/plain,
// text/html, or multipart/alternative) by nodemailer as a sender's client would: the mix bench:parse measures and
// the direct parse's differential test (test/unit/direct-parse.test.ts) compares.
import MailComposer from "nodemailer/lib/mail-composer/index.js";
import { HELD_OUT_DIR as EXTRACTION_HELD_OUT, loadCorpus } from "../test/fixtures/extraction/corpus.js";
import { HELD_OUT_DIR as SAFETY_HELD_OUT, loadSafetyCorpus } from "../test/fixtures/safety/corpus.js";

export interface CorpusMessage {
  /** "corpus: text", "corpus: html" or "corpus: text+html". */
  readonly group: string;
  readonly raw: Buffer;
}

export async function corpusMessages(): Promise<CorpusMessage[]> {
  const fixtures = [...loadCorpus(), ...loadCorpus(EXTRACTION_HELD_OUT), ...loadSafetyCorpus(), ...loadSafetyCorpus(SAFETY_HELD_OUT)];
  const messages: CorpusMessage[] = [];
  for (const f of fixtures) {
    const group = f.html === null ? "corpus: text" : f.text === null ? "corpus: html" : "corpus: text+html";
    const mail = new MailComposer({
      from: f.from ?? "sender@example.com",
      to: "agent@mailbox.localhost",
      subject: f.subject,
      ...(f.text !== null ? { text: f.text } : {}),
      ...(f.html !== null ? { html: f.html } : {}),
    });
    messages.push({ group, raw: await mail.compile().build() });
  }
  return messages;
}
