/**
 * Lines of a file given by an operator (`nonsense import` of TXT, `nonsense restore`), read with a
 * bound: a line is held in memory only up to a limit, so a file of one endless line is refused with
 * its line number instead of growing a string until the process runs out of memory or string length.
 */

/** LineTooLongError: line `line` (1-based) is longer than `limit` bytes; nothing of it was returned. */
export class LineTooLongError extends Error {
  constructor(
    readonly line: number,
    readonly limit: number,
  ) {
    super(`line ${line} is longer than ${limit.toLocaleString('en')} bytes`);
    this.name = 'LineTooLongError';
  }
}

/** decode turns the bytes of one line into text (UTF-8), without the "\r" of a "\r\n" line break. */
function decode(parts: Buffer[]): string {
  const text = (parts.length === 1 ? parts[0]! : Buffer.concat(parts)).toString('utf8');
  return text.endsWith('\r') ? text.slice(0, -1) : text;
}

/**
 * readLines splits a byte stream into lines at "\n" (dropping the "\r" of "\r\n"), numbered from 1,
 * and throws LineTooLongError as soon as a line passes `maxBytes`. Lines are cut as bytes and decoded
 * whole, so a character split between two chunks stays whole. A last line without "\n" counts; an
 * empty one after the last "\n" does not.
 */
export async function* readLines(input: AsyncIterable<Buffer | string>, maxBytes: number): AsyncGenerator<[string, number]> {
  let parts: Buffer[] = [];
  let length = 0;
  let number = 0;
  for await (const data of input) {
    const chunk = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let start = 0;
    for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
      number++;
      length += end - start;
      if (length > maxBytes) throw new LineTooLongError(number, maxBytes);
      parts.push(chunk.subarray(start, end));
      const text = decode(parts);
      parts = [];
      length = 0;
      start = end + 1;
      yield [text, number];
    }
    if (start < chunk.length) {
      length += chunk.length - start;
      if (length > maxBytes) throw new LineTooLongError(number + 1, maxBytes);
      parts.push(chunk.subarray(start));
    }
  }
  if (parts.length > 0) yield [decode(parts), number + 1];
}
