/**
 * The change feed for clients that keep a copy (docs/events.md): `changes`, the log a page at a time,
 * and `events`, the same changes as Server-Sent Events while they happen. Both read the change log
 * (storage/changes.ts); the streams are fed by this process's one reader (services/change-feed/).
 */
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { notModified, revisionTag } from '../../http/cache.ts';
import { absoluteBase } from '../../plugins/links.ts';
import { badRequest, HttpProblem } from '../../http/problem.ts';
import { NOT_MODIFIED, problemResponse, problemResponses } from '../../schemas/api.ts';
import { ChangesPage, ChangesQuery, DEFAULT_CHANGES_LIMIT, EventsHeaders, EventsQuery, EventStream, GONE } from '../../schemas/events.ts';
import { ChangeFeed, changeJson, CLOSE_GRACE_MS, eventStreamsCut, eventStreamsRefused, finalEvent, prunePeriodically, type Stream } from '../../services/change-feed/index.ts';
import { ChangeStore } from '../../storage/changes.ts';

const START_AGAIN =
  'Start the copy again: read the revision from GET /api/v1/nonsense/status, download GET /api/v1/nonsense?format=json, then follow the changes since that revision.';

/** How long EventSource waits before it reconnects, in ms (the stream's `retry:`). */
const RETRY_MS = 2000;

const eventsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const store = new ChangeStore(app.storage.database.db);
  const warn = (message: string, error: unknown) => app.log.warn({ err: error }, message);
  const { database, eventsMaxStreams, eventsMaxStreamsPerClient, changesKeepDays, changesKeepCount } = app.config;
  const feed = new ChangeFeed(store, { postgresUrl: database.engine === 'postgres' ? database.url : undefined, warn });
  const stopPruning = prunePeriodically(store, changesKeepDays, changesKeepCount, warn);
  // Streams never end by themselves: closing them lets the server close.
  app.addHook('preClose', (done) => {
    feed.endAll();
    done();
  });
  app.addHook('onClose', async () => {
    stopPruning();
    await feed.close();
  });

  /** current is the revision now: from the cache, or read anew when `atLeast` is ahead of it (another instance's status). */
  const current = async (atLeast: number) => {
    const cached = await app.storage.cache.current();
    return cached >= atLeast ? cached : app.storage.entries.readRevision();
  };

  /** gone is the 410 of a `since` older than the log (`floor`). */
  const gone = (since: number, floor: number) =>
    new HttpProblem(410, `The change log starts after revision ${floor}; the changes since ${since} are no longer kept. ${START_AGAIN}`, { parameter: 'since' });

  const ahead = (name: string, since: number, revision: number) =>
    badRequest(`The ${name} ${since} is ahead of the current revision ${revision}: it cannot come from this service's status or changes.`, { parameter: name });

  app.get(
    '/nonsense/changes',
    {
      schema: {
        summary: 'Changes since a revision',
        description:
          'Every change after `since` to what the public sees (entries, variables, emojis), in revision order, a page at a time: `Link: <…>; rel="next"` names the next page while more remain. ' +
          'A copy starts from the status\'s `revision` and a JSON export, then follows from that revision (docs/events.md). Changes are kept for `CHANGES_KEEP_DAYS` and at most `CHANGES_KEEP_COUNT`; ' +
          'a `since` older than that is 410.',
        tags: ['entries'],
        querystring: ChangesQuery,
        response: { 200: ChangesPage, ...NOT_MODIFIED, ...problemResponses(400), ...GONE },
      },
    },
    async (request, reply) => {
      const { since, limit = DEFAULT_CHANGES_LIMIT } = request.query;
      const revision = await current(since);
      if (since > revision) throw ahead('since', since, revision);
      const changes = await store.after(since, limit);
      // Read after the changes: rows pruned meanwhile show as a floor past `since`.
      const floor = await store.floor();
      if (since < floor) throw gone(since, floor);
      const upTo = Math.max(revision, changes.at(-1)?.revision ?? 0);
      if (notModified(request, reply, revisionTag(upTo, `c${since}-${limit}`), 'no-cache')) return reply;
      if (changes.length === limit && changes.at(-1)!.revision < upTo) {
        const next = new URL(absoluteBase(request, reply) + request.url);
        next.searchParams.set('since', String(changes.at(-1)!.revision));
        next.searchParams.set('limit', String(limit));
        reply.header('link', `<${next.href}>; rel="next"`);
      }
      reply.header('content-type', 'application/json; charset=utf-8');
      return `{"revision":${upTo},"changes":[${changes.map(changeJson).join(',')}]}`;
    },
  );

  const open = new Map<string, number>();
  let total = 0;

  app.get(
    '/nonsense/events',
    {
      schema: {
        summary: 'Changes as they happen (Server-Sent Events)',
        description:
          'The changes of `/api/v1/nonsense/changes` as a stream for `EventSource`: `id:` the revision, `event:` the type, `data:` the change. `Last-Event-ID` (sent by EventSource when it ' +
          'reconnects) or `since` resumes after a revision; a resume from before the kept log gets one `reset` event and the stream ends. Streams are limited per address ' +
          '(`EVENTS_MAX_STREAMS_PER_CLIENT`, then 429) and in total (`EVENTS_MAX_STREAMS`, then 503).',
        tags: ['entries'],
        querystring: EventsQuery,
        headers: EventsHeaders,
        response: {
          200: { description: 'The stream of changes.', content: { 'text/event-stream': { schema: EventStream } } },
          ...problemResponses(400),
          429: problemResponse(429, 'Too many requests, or event streams open, from this address; `Retry-After` says when to try again.'),
        },
      },
    },
    async (request, reply) => {
      const header = request.headers['last-event-id'];
      const resume = header !== undefined ? Number(header) : request.query.since;
      const revision = await current(resume ?? 0);
      if (resume !== undefined && resume > revision) throw ahead(header !== undefined ? 'Last-Event-ID' : 'since', resume, revision);
      reply.header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-store').header('x-accel-buffering', 'no');

      const client = app.fairShare.clientOf(request);
      const mine = open.get(client) ?? 0;
      if (mine >= eventsMaxStreamsPerClient) {
        eventStreamsRefused.inc({ budget: 'per_client' });
        throw new HttpProblem(429, `Your address already has ${mine} event streams open, the most it may have at once; close one first.`, {}, { 'retry-after': '10' });
      }
      if (total >= eventsMaxStreams) {
        eventStreamsRefused.inc({ budget: 'total' });
        throw new HttpProblem(503, 'The service has as many event streams open as it serves at once; try again later.', {}, { 'retry-after': '10' });
      }
      // The GET's answer without its body: a stream, which states no length (plugins/head.ts).
      if (request.method === 'HEAD') return reply.send(Readable.from([]));

      const retry = `retry: ${RETRY_MS}\n\n`;
      if (resume !== undefined) {
        const floor = await store.floor();
        if (resume < floor) {
          eventStreamsCut.inc({ reason: 'reset' });
          const body = new Readable({ read() {} });
          body.push(retry);
          body.push(finalEvent('reset', `The change log starts after revision ${floor}; the changes since ${resume} are no longer kept. ${START_AGAIN}`));
          body.push(null);
          return reply.send(body);
        }
      }
      open.set(client, mine + 1);
      total++;
      // Written to the response itself, not through a stream that Fastify pipes: a stream lasts for
      // hours, and a piped one keeps several times the memory. Fastify still logs and counts the
      // request when the response ends, and `return reply` tells it the answer is on its way.
      reply.raw.writeHead(200, reply.getHeaders() as OutgoingHttpHeaders);
      reply.raw.write(retry);
      // Without a resume point the stream starts at the revision read above, before the answer's head
      // was sent: every change a client makes after it has the head reaches it.
      const stream = streamOf(reply.raw, resume ?? revision);
      reply.raw.once('close', () => {
        feed.unsubscribe(stream);
        total--;
        const left = open.get(client)! - 1;
        if (left === 0) open.delete(client);
        else open.set(client, left);
      });
      feed.subscribe(stream).catch((error: unknown) => {
        warn('An event stream could not be started', error);
        stream.end();
      });
      return reply;
    },
  );
};

/** streamOf is the feed's view of one response: bytes written to it, and what waits unsent. */
function streamOf(response: ServerResponse, cursor: number): Stream {
  let ended = false;
  return {
    cursor,
    write(chunk) {
      if (!ended && !response.destroyed) response.write(chunk);
    },
    buffered: () => response.writableLength,
    end(final) {
      if (ended) return;
      ended = true;
      if (response.destroyed) return;
      if (final !== undefined) response.write(final);
      response.end();
      // A client that does not read even the last bytes loses its connection.
      const drop = setTimeout(() => response.destroy(), CLOSE_GRACE_MS);
      drop.unref();
      response.once('close', () => clearTimeout(drop));
    },
  };
}

export default eventsRoutes;
