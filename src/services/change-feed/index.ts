/**
 * The change feed of one process (docs/events.md): one reader of the change log, fanning new changes
 * out to this process's event streams. It reads only while streams are open, by revision (`select …
 * where revision > ?`), so its cost does not grow with the number of streams:
 *
 * - SQLite: it polls the log every POLL_MS, so changes written by another process (`nonsense import`,
 *   `nonsense restore` aside) reach the streams within a second.
 * - PostgreSQL: one dedicated connection LISTENs on the channel every writing transaction notifies
 *   on commit (storage/changes.ts), and a notification starts a read at once; polling goes on, slower,
 *   as a fallback, and fast while the listening connection is down and being re-made.
 *
 * Each stream has a bounded send buffer: new changes are written to a stream only while what waits for
 * its client is under MAX_BUFFERED_BYTES, else the stream gets a final `overflow` event and is closed,
 * so a client that does not keep up holds at most that much and one batch. A stream that resumes
 * reads the log at its client's pace, waiting while its buffer is full. The fan-out writes to STREAMS_PER_TURN streams, then
 * gives the event loop back, so a change for thousands of streams is never one long burst. The same
 * bytes (one Buffer per batch of changes) are written to every stream.
 */
import client from 'prom-client';
import type pg from 'pg';
import { registry } from '../../metrics/registry.ts';
import { CHANGES_CHANNEL, type Change, type ChangeStore } from '../../storage/changes.ts';

/** How often the log is read while streams are open (SQLite, and PostgreSQL without its listener). */
export const POLL_MS = 250;
/** How often PostgreSQL's log is read besides the notifications, in case one is lost. */
const LISTENING_POLL_MS = 2000;
/** How often every stream gets a comment line, so that proxies and the idle-connection sweep keep it open. */
export const HEARTBEAT_MS = 15_000;
/**
 * What may wait unsent for one client: a stream with more than this waiting when new changes come is
 * cut off. The bytes of one batch are shared by every stream they are written to.
 */
export const MAX_BUFFERED_BYTES = 256 * 1024;
/** Streams written to per turn of the event loop. */
const STREAMS_PER_TURN = 50;
/** Changes read from the log at once. */
const READ_BATCH = 500;
/** How long a stream cut off may take to send its last bytes before its connection is dropped. */
export const CLOSE_GRACE_MS = 10_000;
/** The wait before the listening connection is made again. */
const RECONNECT_MS = 1000;

/** One open event stream, as the feed writes to it. */
export interface Stream {
  /** The revision of the last change sent (or the one the stream started after). */
  cursor: number;
  /** write queues bytes for the client. */
  write(chunk: Buffer): void;
  /** buffered is how many bytes wait unsent for the client. */
  buffered(): number;
  /** end sends `final` (when given) and closes the stream. */
  end(final?: Buffer): void;
}

interface State {
  live: boolean;
  closed: boolean;
}

const feeds = new Set<ChangeFeed>();
export const eventStreamsCut = new client.Counter({
  name: 'nonsense_event_streams_cut_total',
  help: 'Event streams closed by the service: overflow (the client fell behind by more than its send buffer), reset (it resumed from before the change log).',
  labelNames: ['reason'] as const,
  registers: [registry],
});
export const eventStreamsRefused = new client.Counter({
  name: 'nonsense_event_streams_refused_total',
  help: 'Event streams refused: per_client (429, EVENTS_MAX_STREAMS_PER_CLIENT) or total (503, EVENTS_MAX_STREAMS).',
  labelNames: ['budget'] as const,
  registers: [registry],
});
new client.Gauge({
  name: 'nonsense_event_streams',
  help: 'Event streams open (GET /api/v1/nonsense/events).',
  registers: [registry],
  collect() {
    let open = 0;
    for (const feed of feeds) open += feed.size;
    this.set(open);
  },
});

/** changeJson is a change as the API writes it: `{ revision, type, at, key, entry? }`, the stored entry JSON as it is. */
export function changeJson(change: Change): string {
  const head = `{"revision":${change.revision},"type":"${change.type}","at":${change.at},"key":${JSON.stringify(change.key)}`;
  return change.entry === null ? `${head}}` : `${head},"entry":${change.entry}}`;
}

/** eventText is a change as one Server-Sent Event. */
export function eventText(change: Change): string {
  return `id: ${change.revision}\nevent: ${change.type}\ndata: ${changeJson(change)}\n\n`;
}

/** finalEvent is an event that ends a stream, with a detail for a person. */
export function finalEvent(name: string, detail: string): Buffer {
  return Buffer.from(`event: ${name}\ndata: ${JSON.stringify({ detail })}\n\n`);
}

const HEARTBEAT = Buffer.from(':\n\n');
const OVERFLOW = finalEvent(
  'overflow',
  'This client fell too far behind reading the stream, so it was closed. Connect again with Last-Event-ID (EventSource does) to resume from the last change received.',
);

/** A batch of encoded changes: the bytes, and where each change ends in them. */
interface Batch {
  bytes: Buffer;
  revisions: number[];
  ends: number[];
}

function encode(changes: readonly Change[]): Batch {
  const texts = changes.map(eventText);
  const ends: number[] = [];
  let end = 0;
  for (const text of texts) {
    end += Buffer.byteLength(text);
    ends.push(end);
  }
  return { bytes: Buffer.from(texts.join('')), revisions: changes.map((change) => change.revision), ends };
}

export interface FeedOptions {
  /** PostgreSQL: the server to LISTEN on (DATABASE_URL); absent on SQLite. */
  postgresUrl?: string;
  /** Logs a problem of the listener. */
  warn?: (message: string, error: unknown) => void;
}

export class ChangeFeed {
  private readonly streams = new Map<Stream, State>();
  /** The revision up to which the log has been read and fanned out; -1 before the first read. */
  private last = -1;
  private starting: Promise<void> | null = null;
  private reading = false;
  private again = false;
  private poller: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private listener: pg.Client | undefined;
  private listening = false;
  private reconnect: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly store: ChangeStore,
    private readonly options: FeedOptions = {},
  ) {
    feeds.add(this);
  }

  /** size is the number of open streams. */
  get size(): number {
    return this.streams.size;
  }

  /**
   * subscribe adds a stream that has received everything up to `stream.cursor`: the changes after
   * it are sent from the log, then as they come.
   */
  async subscribe(stream: Stream): Promise<void> {
    const state: State = { live: false, closed: false };
    this.streams.set(stream, state);
    try {
      await this.start();
      await this.catchUp(stream, state);
    } catch (error) {
      this.unsubscribe(stream);
      throw error;
    }
  }

  /** unsubscribe removes a stream (its client went away). */
  unsubscribe(stream: Stream): void {
    const state = this.streams.get(stream);
    if (state !== undefined) state.closed = true;
    this.streams.delete(stream);
    if (this.streams.size === 0) this.stop();
  }

  /** close ends every stream and stops reading. */
  async close(): Promise<void> {
    this.closed = true;
    for (const stream of [...this.streams.keys()]) {
      this.unsubscribe(stream);
      stream.end();
    }
    this.stop();
    clearTimeout(this.reconnect);
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => {});
    feeds.delete(this);
  }

  /** endAll closes every stream (the process is shutting down) without a final event. */
  endAll(): void {
    for (const stream of [...this.streams.keys()]) {
      this.unsubscribe(stream);
      stream.end();
    }
  }

  private start(): Promise<void> {
    if (this.poller !== undefined) return Promise.resolve();
    this.starting ??= (async () => {
      try {
        this.last = await this.store.latest();
        if (this.options.postgresUrl !== undefined && this.listener === undefined) void this.listen();
        this.schedule();
        this.heartbeat ??= setInterval(() => void this.beat(), HEARTBEAT_MS);
        this.heartbeat.unref();
      } finally {
        this.starting = null;
      }
    })();
    return this.starting;
  }

  private schedule(): void {
    clearInterval(this.poller);
    this.poller = setInterval(() => this.read(), this.listening ? LISTENING_POLL_MS : POLL_MS);
    this.poller.unref();
  }

  private stop(): void {
    clearInterval(this.poller);
    clearInterval(this.heartbeat);
    this.poller = undefined;
    this.heartbeat = undefined;
  }

  /** read reads the log after `last` and fans it out; a call while one runs makes it read once more. */
  private read(): void {
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    void (async () => {
      try {
        do {
          this.again = false;
          if (this.last < 0 || this.streams.size === 0) return;
          const changes = await this.store.after(this.last, READ_BATCH);
          if (changes.length === 0) continue;
          this.last = changes[changes.length - 1]!.revision;
          await this.fanOut(encode(changes));
          if (changes.length === READ_BATCH) this.again = true;
        } while (this.again);
      } catch (error) {
        this.options.warn?.('The change feed could not read the change log; it tries again', error);
      } finally {
        this.reading = false;
      }
    })();
  }

  /** sendTo writes the part of `batch` after the stream's cursor, or cuts the stream off when its buffer is full. */
  private sendTo(stream: Stream, batch: Batch): void {
    const { revisions, ends, bytes } = batch;
    if (stream.cursor >= revisions[revisions.length - 1]!) return;
    let from = 0;
    let i = 0;
    while (i < revisions.length && revisions[i]! <= stream.cursor) from = ends[i++]!;
    const chunk = from === 0 ? bytes : bytes.subarray(from);
    if (stream.buffered() > MAX_BUFFERED_BYTES) {
      this.cut(stream);
      return;
    }
    stream.write(chunk);
    stream.cursor = revisions[revisions.length - 1]!;
  }

  private cut(stream: Stream): void {
    this.unsubscribe(stream);
    eventStreamsCut.inc({ reason: 'overflow' });
    stream.end(OVERFLOW);
  }

  private async fanOut(batch: Batch): Promise<void> {
    const targets = [...this.streams].filter(([, state]) => state.live).map(([stream]) => stream);
    for (let i = 0; i < targets.length; i += STREAMS_PER_TURN) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      const end = Math.min(targets.length, i + STREAMS_PER_TURN);
      for (let k = i; k < end; k++) {
        const stream = targets[k]!;
        if (this.streams.has(stream)) this.sendTo(stream, batch);
      }
    }
  }

  /** catchUp sends a new stream what the log holds after its cursor, until it has reached the feed; from then on the fan-out writes to it. */
  private async catchUp(stream: Stream, state: State): Promise<void> {
    while (!state.closed && stream.cursor < this.last) {
      const changes = await this.store.after(stream.cursor, READ_BATCH);
      if (state.closed) return;
      if (changes.length === 0) {
        stream.cursor = Math.max(stream.cursor, this.last);
        break;
      }
      this.sendTo(stream, encode(changes));
      // Reading the log goes at the client's pace: a client catching up is never cut off for it.
      while (this.streams.has(stream) && stream.buffered() > MAX_BUFFERED_BYTES / 4) await new Promise((resolve) => setTimeout(resolve, 20));
      if (!this.streams.has(stream)) return;
    }
    state.live = true;
  }

  private async beat(): Promise<void> {
    const targets = [...this.streams.keys()];
    for (let i = 0; i < targets.length; i += STREAMS_PER_TURN) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      for (const stream of targets.slice(i, i + STREAMS_PER_TURN)) {
        if (!this.streams.has(stream)) continue;
        if (stream.buffered() > MAX_BUFFERED_BYTES) this.cut(stream);
        else stream.write(HEARTBEAT);
      }
    }
  }

  /** listen makes the LISTEN connection (PostgreSQL), and makes it again whenever it is lost. */
  private async listen(): Promise<void> {
    const { default: driver } = await import('pg');
    const listener = new driver.Client({ connectionString: this.options.postgresUrl, connectionTimeoutMillis: 5000 });
    this.listener = listener;
    const lost = (error?: unknown) => {
      if (this.listener !== listener) return;
      this.listener = undefined;
      this.listening = false;
      if (this.poller !== undefined) this.schedule();
      listener.end().catch(() => {});
      if (this.closed) return;
      if (error !== undefined) this.options.warn?.('The change feed lost its LISTEN connection; it polls meanwhile and connects again', error);
      this.reconnect = setTimeout(() => void this.listen(), RECONNECT_MS);
      this.reconnect.unref();
    };
    listener.on('error', lost);
    listener.on('end', () => lost());
    listener.on('notification', () => this.read());
    try {
      await listener.connect();
      await listener.query(`listen ${CHANGES_CHANNEL}`);
      if (this.listener !== listener) return;
      this.listening = true;
      if (this.poller !== undefined) this.schedule();
      // Whatever committed while the connection was being made.
      this.read();
    } catch (error) {
      lost(error);
    }
  }
}

/**
 * prunePeriodically removes old changes in the background (CHANGES_KEEP_DAYS, CHANGES_KEEP_COUNT):
 * soon after the start, then every `everyMs`, a batch at a time with the event loop given back
 * between batches. Returns the function that stops it.
 */
export function prunePeriodically(store: ChangeStore, keepDays: number, keepCount: number, warn: (message: string, error: unknown) => void, everyMs = 10 * 60_000): () => void {
  let running = false;
  const prune = async () => {
    if (running) return;
    running = true;
    try {
      await store.prune(keepDays, keepCount, 1000, () => new Promise((resolve) => setImmediate(resolve)));
    } catch (error) {
      warn('The change log could not be pruned; it is tried again later', error);
    } finally {
      running = false;
    }
  };
  const first = setTimeout(() => void prune(), 5000).unref();
  const timer = setInterval(() => void prune(), everyMs).unref();
  return () => {
    clearTimeout(first);
    clearInterval(timer);
  };
}
