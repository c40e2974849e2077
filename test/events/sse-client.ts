/** A small Server-Sent Events reader for tests: the events of one stream, as they come. */
import http from 'node:http';

export interface ServerEvent {
  id?: string;
  event: string;
  data: string;
  /** When it arrived (performance.now()). */
  at: number;
}

export interface EventReader {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: ServerEvent[];
  /** Comment lines received. */
  comments: number;
  ended: Promise<void>;
  response: http.IncomingMessage;
  /** next waits until an event matching `test` has arrived (or `timeoutMs` passed) and returns it. */
  next(test: (event: ServerEvent) => boolean, timeoutMs?: number): Promise<ServerEvent>;
  close(): void;
}

/** openEvents opens `url` as an event stream; resolves once the answer's head has arrived. */
export function openEvents(url: string, headers: Record<string, string> = {}, localAddress?: string): Promise<EventReader> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { accept: 'text/event-stream', ...headers }, localAddress, agent: false }, (response) => {
      const events: ServerEvent[] = [];
      const waiters = new Set<() => void>();
      let buffer = '';
      let comments = 0;
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event: ServerEvent = { event: 'message', data: '', at: performance.now() };
          let fields = 0;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) {
              comments++;
              continue;
            }
            const colon = line.indexOf(':');
            const name = colon === -1 ? line : line.slice(0, colon);
            const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (name === 'id') event.id = value;
            else if (name === 'event') event.event = value;
            else if (name === 'data') event.data += (event.data === '' ? '' : '\n') + value;
            else continue;
            fields++;
          }
          if (fields > 0) events.push(event);
        }
        reader.comments = comments;
        for (const wake of [...waiters]) wake();
      });
      const ended = new Promise<void>((done) => {
        response.once('end', done);
        response.once('close', done);
        response.once('error', () => done());
      });
      const reader: EventReader = {
        status: response.statusCode ?? 0,
        headers: response.headers,
        events,
        comments,
        ended,
        response,
        next(test, timeoutMs = 2000) {
          return new Promise((found, fail) => {
            const check = () => {
              const event = events.find(test);
              if (event === undefined) return false;
              waiters.delete(check);
              clearTimeout(timer);
              found(event);
              return true;
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`No such event within ${timeoutMs} ms; got ${JSON.stringify(events.map((e) => [e.id, e.event]))}`));
            }, timeoutMs);
            waiters.add(check);
            if (!check()) void ended.then(() => check());
          });
        },
        close: () => request.destroy(),
      };
      resolve(reader);
    });
    request.on('error', reject);
  });
}
