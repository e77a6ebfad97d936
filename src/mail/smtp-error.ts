// An SMTP reply for a refused command: the basic code the client acts on, and the RFC 3463 enhanced status that
// says why. smtp-server derives an enhanced status from the basic code alone (550 is always 5.1.1), which cannot
// say "relaying denied" (5.7.1); so the server runs with its own codes hidden and this error writes its own.
export class SmtpError extends Error {
  /** smtp-server reads the reply code from this property of a hook's error. */
  readonly responseCode: number;

  constructor(
    responseCode: number,
    readonly enhancedStatus: string,
    text: string,
  ) {
    super(`${enhancedStatus} ${text}`);
    this.responseCode = responseCode;
  }
}

/** Transient local failure (database down, bug): the client keeps the message and retries later. */
export const localError = (): SmtpError => new SmtpError(451, "4.3.0", "local error in processing, try again later");
