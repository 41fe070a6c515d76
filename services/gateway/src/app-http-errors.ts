/** The App client's errors (app-http.ts re-exports them; app-h1.ts throws them too). */

/** The target is not a public address. The message is for the server log, never for the program. */
export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError';
}

export class AnswerTooLargeError extends Error {
  override name = 'AnswerTooLargeError';
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`the App's answer is larger than ${maxBytes} bytes`);
    this.maxBytes = maxBytes;
  }
}

/** The App did not answer within the call's whole deadline. For the server log, never for the program. */
export class AppTimeoutError extends Error {
  override name = 'AppTimeoutError';
  constructor(timeoutMs: number) {
    super(`the App did not answer within ${timeoutMs} ms`);
  }
}
