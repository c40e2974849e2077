/**
 * The log's destination and the access log: one line per request, written when its response ends.
 *
 * Lines go to standard output in batches: what waits is written with one system call once 16 KiB
 * are waiting or 100 ms after the first of them, and whatever waits is written on exit. Under load
 * this turns thousands of writes a second into a few dozen, which saved several microseconds of a
 * request that costs a few dozen; at low rates a line shows within 100 ms. pino's own asynchronous
 * destination (sonic-boom with `minLength`) measured slower than its synchronous one here, as it
 * re-measures its growing buffer on every write.
 *
 * The lines are JSON, one an event, for whatever collects them; on a terminal (standard output a TTY)
 * they become one readable line an event instead, through pino-pretty's formatter.
 */
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import pino from 'pino';
import type PinoPretty from 'pino-pretty';
import type { AccessLogWriter } from './fast-lane.ts';

/** Bytes that make a batch worth writing at once. */
const BATCH = 16 * 1024;
/** A batch's buffer: the batch, and room for the line that completes it (UTF-8: at most 3 bytes a UTF-16 unit). */
const CAPACITY = 2 * BATCH;
/** The longest a line waits to be written. */
const DELAY_MS = 100;

/** Where batches go: standard output, or a test's collector. */
export interface BatchSink {
  write(bytes: Buffer): unknown;
  flushSync?(): void;
}

/**
 * BatchedDestination collects pino's lines and writes them in batches. Each line is encoded straight
 * into the batch's buffer, which is written as it is: no joined string to make, measure and encode
 * again.
 */
export class BatchedDestination {
  private buffer = Buffer.allocUnsafe(CAPACITY);
  private length = 0;
  private scheduled = false;

  constructor(private readonly out: BatchSink) {}

  write(line: string): void {
    if (this.length + 3 * line.length > CAPACITY) {
      this.flush();
      // A line larger than a batch's buffer goes out alone.
      if (3 * line.length > CAPACITY) {
        this.out.write(Buffer.from(line, 'utf8'));
        return;
      }
    }
    this.length += this.buffer.write(line, this.length, 'utf8');
    if (this.length >= BATCH) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setTimeout(this.flushLater, DELAY_MS).unref();
    }
  }

  /** flush writes whatever waits, synchronously. */
  flush(): void {
    if (this.length === 0) return;
    const batch = this.buffer.subarray(0, this.length);
    // A new buffer for the next batch: the sink may keep this one (a full pipe, retried later).
    this.buffer = Buffer.allocUnsafe(CAPACITY);
    this.length = 0;
    this.out.write(batch);
  }

  /** flushSync is what pino calls before a fatal exit. */
  flushSync(): void {
    this.flush();
    this.out.flushSync?.();
  }

  private readonly flushLater = (): void => {
    this.scheduled = false;
    this.flush();
  };
}

/** readable is a log line's event as a person reads it: a request as `GET /path 200 1.3 ms`. */
function readable(line: string): Record<string, unknown> {
  let event: Record<string, unknown>;
  try {
    event = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { msg: line };
  }
  if (event.msg !== 'request' || event.method === undefined) return event;
  const { level, time, method, url, status, ms } = event;
  return { level, time, msg: `${String(method)} ${String(url)} ${String(status)} ${String(ms)} ms` };
}

/**
 * PrettySink writes each JSON line of a batch as one readable line: time, level, message, and the
 * event's other fields on the same line (an error's stack below it).
 */
export class PrettySink implements BatchSink {
  constructor(
    private readonly out: BatchSink,
    private readonly prettify: (event: object) => string,
  ) {}

  write(bytes: Buffer): void {
    let text = '';
    // A batch holds whole lines: the destination is given one complete line at a time.
    for (const line of bytes.toString('utf8').split('\n')) if (line !== '') text += this.prettify(readable(line));
    this.out.write(Buffer.from(text, 'utf8'));
  }

  flushSync(): void {
    this.out.flushSync?.();
  }
}

/**
 * prettyFormatter is pino-pretty's formatter as the terminal gets it. pino-pretty is loaded here only:
 * a service whose output goes to a file, a pipe or a journal never loads it (it takes a few hundred
 * milliseconds to load). Colours follow the terminal (NO_COLOR turns them off).
 */
export function prettyFormatter(options: { colorize?: boolean } = {}): (event: object) => string {
  const { prettyFactory } = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return prettyFactory({ singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', ...options });
}

let stdout: BatchedDestination | undefined;

/**
 * logDestination is the batched standard output; one per process, however many apps it builds. Its
 * lines are JSON, or readable ones when standard output is a terminal (`terminal`).
 */
export function logDestination(terminal = process.stdout.isTTY === true): BatchedDestination {
  if (stdout === undefined) {
    // Synchronous underneath: it retries a full pipe (EAGAIN) and stops quietly on a closed one (EPIPE).
    // In buffer mode it takes Buffers, which its types do not say.
    const fd = pino.destination({ dest: 1, sync: true, contentMode: 'buffer' }) as unknown as BatchSink;
    const destination = new BatchedDestination(terminal ? new PrettySink(fd, prettyFormatter()) : fd);
    process.on('exit', () => destination.flush());
    stdout = destination;
  }
  return stdout;
}

/** A string JSON writes as it is, between quotes: printable ASCII without `"` and `\\`. */
const PLAIN = /^[^"\\\x00-\x1f\x7f-\uffff]*$/;

/** jsonString is `JSON.stringify(value)` for a string, without its cost for the plain ones a request line mostly has. */
const jsonString = (value: string) => (PLAIN.test(value) ? `"${value}"` : JSON.stringify(value));

/**
 * accessLine is the access log's line exactly as pino writes it at level info (`prefix` is the
 * logger's bindings as pino writes them, `,"pid":…,"hostname":…`), made without pino: formatting it through the logger
 * cost several microseconds a request, a tenth of a fast request's time.
 */
export function accessLine(prefix: string, time: number, id: string, method: string, url: string, status: number, ms: number): string {
  return `{"level":30,"time":${time}${prefix},"reqId":${jsonString(id)},"method":${jsonString(method)},"url":${jsonString(url)},"status":${status},"ms":${ms},"msg":"request"}\n`;
}

export interface AccessLogOptions {
  /** The destination of the app's own logger, when it built one: lines are written there directly. */
  destination?: BatchedDestination;
}

/** The access log: method, URL, status and time of every request, with its id, at level info. */
export default fp<AccessLogOptions>(
  async function accessLogPlugin(app: FastifyInstance, { destination }) {
    const log = app.log as typeof app.log & { isLevelEnabled?: (level: string) => boolean; [pino.symbols.chindingsSym]?: unknown };
    if (log.isLevelEnabled?.('info') !== true) return;
    // pino's own prefix of every line of this logger: `,"pid":…,"hostname":…`.
    const prefix = log[pino.symbols.chindingsSym];
    const write: AccessLogWriter =
      destination !== undefined && typeof prefix === 'string'
        ? (id, method, url, status, ms) => {
            if (log.isLevelEnabled!('info')) destination.write(accessLine(prefix, Date.now(), id, method, url, status, ms));
          }
        : (id, method, url, status, ms) => app.log.info({ reqId: id, method, url, status, ms }, 'request');
    // A callback hook: cheaper than an async one on the hot path.
    app.addHook(
      'onResponse',
      app.fastLane.mirrors('accessLog', (request, reply, done) => {
        write(request.id, request.method, request.url, reply.statusCode, Math.round(reply.elapsedTime * 10) / 10);
        done();
      }),
    );
    app.fastLane.logTo(write);
  },
  { name: 'access-log' },
);
