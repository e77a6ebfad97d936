// What one SMTP result means for a recipient, as ZoneMTA decides it: retry later (defer) or give up (reject).
// Pure and table-tested (test/unit/classify-smtp-result.test.ts): the delivery workflow only acts on the verdict.

export type DeliveryVerdict =
  | { readonly kind: "delivered"; readonly response: string }
  | { readonly kind: "deferred"; readonly response: string; readonly failureCode: string }
  | { readonly kind: "rejected"; readonly response: string; readonly failureCode: string; readonly hardBounce: boolean };

/** A failure before any SMTP reply: DNS, connect, TLS, timeout. */
export interface TransportFailure {
  readonly code?: string;
  readonly message: string;
}

const ENHANCED = /\b([245])\.(\d{1,3})\.(\d{1,3})\b/;

/**
 * Classifies an SMTP reply (`250 2.0.0 OK`, `550-5.1.1 …`). 2xx delivered; 4xx deferred; 5xx rejected, where a
 * hard bounce (the mailbox or domain does not exist, RFC 3463 x.1.1/x.1.2/x.1.10, or x.1.x without an enhanced
 * code of another class) suppresses the address, and policy or content refusals do not.
 */
export function classifySmtpReply(responseCode: number, response: string): DeliveryVerdict {
  const text = response.trim();
  if (responseCode >= 200 && responseCode < 300) return { kind: "delivered", response: text };
  const enhanced = ENHANCED.exec(text);
  if (responseCode >= 400 && responseCode < 500) {
    return { kind: "deferred", response: text, failureCode: enhanced ? `smtp_${enhanced[1]}.${enhanced[2]}.${enhanced[3]}` : `smtp_${responseCode}` };
  }
  if (responseCode >= 500 && responseCode < 600) {
    // Some servers answer 5xx with a 4.x.x enhanced code while greylisting; the enhanced class wins (RFC 3463 §2).
    if (enhanced?.[1] === "4") {
      return { kind: "deferred", response: text, failureCode: `smtp_${enhanced[1]}.${enhanced[2]}.${enhanced[3]}` };
    }
    const hardBounce = enhanced ? enhanced[2] === "1" && ["1", "2", "3", "6", "10"].includes(enhanced[3]!) : responseCode === 550 && /no such user|unknown user|does not exist|user unknown|mailbox unavailable/i.test(text);
    return {
      kind: "rejected",
      response: text,
      failureCode: enhanced ? `smtp_${enhanced[1]}.${enhanced[2]}.${enhanced[3]}` : `smtp_${responseCode}`,
      hardBounce,
    };
  }
  return { kind: "deferred", response: text, failureCode: "smtp_unexpected_reply" };
}

/**
 * Network trouble is temporary, except a domain that cannot receive mail at all, and one whose only next hops
 * are addresses we never connect to (ENOTPUBLIC, src/outbound/delivery/next-hop.ts): our policy, not the address's
 * fault, so no hard bounce.
 */
export function classifyTransportFailure(failure: TransportFailure): DeliveryVerdict {
  if (failure.code === "ENULLMX" || failure.code === "ENODOMAIN") {
    return { kind: "rejected", response: failure.message, failureCode: failure.code === "ENULLMX" ? "null_mx" : "no_such_domain", hardBounce: true };
  }
  if (failure.code === "ENOTPUBLIC") return { kind: "rejected", response: failure.message, failureCode: "next_hop_not_public", hardBounce: false };
  return { kind: "deferred", response: failure.message, failureCode: `transport_${(failure.code ?? "error").toLowerCase()}` };
}
