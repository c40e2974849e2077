/**
 * ODataRequestError is what the OData query parsing and compiling throw for input they cannot serve:
 * an unknown property, bad syntax, an unsupported function. The OData routes render it in the OData v2
 * error format; it never becomes a 500.
 */
export class ODataRequestError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 404 | 405 | 406 = 400,
  ) {
    super(message);
    this.name = 'ODataRequestError';
  }
}

/** syntaxError names the 1-based character where `$option` went wrong, so a person can find it. */
export function syntaxError(option: string, position: number, problem: string): ODataRequestError {
  return new ODataRequestError(`Syntax error in ${option} at character ${position + 1}: ${problem}`);
}
