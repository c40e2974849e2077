/**
 * TimeLimitError is how a statement run with a time limit (EngineQuirks.withTimeLimit) fails when it
 * runs past the limit, on either engine; the caller decides what that means for its request.
 */
export class TimeLimitError extends Error {
  constructor(readonly limitMs: number) {
    super(`The statement ran past its time limit of ${limitMs} ms.`);
    this.name = 'TimeLimitError';
  }
}
