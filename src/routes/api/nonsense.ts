/**
 * Public entry endpoints: random, status and by UUID. Random and by-UUID are the hottest paths of the
 * service: they answer through the entry service (services/entries) with JSON prepared ahead, from
 * memory in the fast lane when it holds the entry, else through the database. The body is the
 * response schema's serialisation byte for byte (formats/entry.ts; test/formats/entry-json.test.ts
 * checks it), so the schema still documents it while the serialiser is skipped.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { parseUuid, uuidSegment } from '../../domain/uuid.ts';
import { mathRandomPick } from '../../domain/variables.ts';
import { ENTRY_JSON_TYPE, EntryJsonTemplate, renderEntryJson } from '../../formats/entry.ts';
import { notModified, revisionTag } from '../../http/cache.ts';
import { notFound } from '../../http/problem.ts';
import { Entry, EntryPathParams, NOT_MODIFIED, problemResponses, Status } from '../../schemas/api.ts';
import type { Draw, ReadyEntry } from '../../services/entries/index.ts';
import { laneNotModified, type LaneAnswer } from '../../plugins/fast-lane.ts';

/**
 * entryUuid is the lower-case UUID of the path segment. `.png` has its own route (share-image.ts), so
 * any other extension (`.jpg`, `.PNG`) is a 404: share images exist as PNG only.
 */
function entryUuid(id: string): string {
  const { uuid, extension } = uuidSegment(id);
  if (extension !== '') throw notFound(`Share images exist as PNG only: use /api/v1/nonsense/${uuid}.png.`);
  return uuid;
}

const NO_ENTRIES = 'The database has no entries yet. Add some with the admin API or `nonsense import`.';

/** sendEntry sends a prepared entry as the JSON response. */
function sendEntry(reply: FastifyReply, entry: ReadyEntry): void {
  reply.header('content-type', ENTRY_JSON_TYPE).send(renderEntryJson(entry.json));
}

/**
 * laneAnswer is the fast lane's answer with a prepared entry: its JSON, and the JSON's length in
 * bytes when that needs no pass over it (ASCII, as most entries are).
 */
function laneAnswer(entry: ReadyEntry, headers: readonly string[]): LaneAnswer {
  const json = entry.json;
  if (json instanceof EntryJsonTemplate) {
    const body = json.render(mathRandomPick);
    return { status: 200, headers, body, bytes: json.ascii ? body.length : undefined };
  }
  return { status: 200, headers, body: json, bytes: entry.asciiBytes };
}

/** The headers of a random entry in the fast lane, besides the common ones. */
const RANDOM_HEADERS = ['content-type', ENTRY_JSON_TYPE, 'cache-control', 'no-store'];

const nonsenseRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const reader = app.entryService;

  // The ETag of a by-UUID answer is the revision's; made once per revision, with the fast lane's headers.
  let tagged = { revision: -1, tag: '', headers: [] as string[], notModifiedHeaders: [] as string[] };
  const taggedOf = (revision: number) => {
    if (tagged.revision !== revision) {
      const tag = revisionTag(revision);
      const notModifiedHeaders = ['etag', tag, 'cache-control', 'no-cache'];
      tagged = { revision, tag, headers: ['content-type', ENTRY_JSON_TYPE, ...notModifiedHeaders], notModifiedHeaders };
    }
    return tagged;
  };
  const tagOf = (revision: number) => taggedOf(revision).tag;

  // A random pick the lane drew but could not answer from memory, continued by the route: a fresh
  // pick there would favour the entries the cache holds.
  const drawn = new WeakMap<IncomingMessage, Draw>();

  // The fast lane (plugins/fast-lane.ts) answers both from memory, before Fastify; the routes below
  // answer whatever it leaves: the database path, errors, HEAD, query strings.
  const random = `${app.prefix}/nonsense/random`;
  app.fastLane.get(random, random, (_path, request) => {
    const found = reader.randomNow(mathRandomPick);
    if (found === undefined) return undefined;
    if ('block' in found) {
      drawn.set(request, found);
      return undefined;
    }
    return laneAnswer(found, RANDOM_HEADERS);
  });
  const byUuid = `${app.prefix}/nonsense/`;
  app.fastLane.get(
    byUuid,
    `${app.prefix}/nonsense/:id`,
    (path, request) => {
      const uuid = parseUuid(path.slice(byUuid.length));
      const revision = reader.revisionNow();
      if (uuid === null || revision === undefined) return undefined;
      const found = reader.findNow(uuid);
      if (found === undefined) return undefined;
      const { tag, headers, notModifiedHeaders } = taggedOf(revision);
      if (laneNotModified(request, tag)) return { status: 304, headers: notModifiedHeaders, body: '' };
      return laneAnswer(found, headers);
    },
    36,
  );

  app.get(
    '/nonsense/random',
    {
      schema: {
        summary: 'One random entry',
        description: 'Uniform over visible entries. Never cached (`Cache-Control: no-store`).',
        tags: ['entries'],
        response: { 200: Entry, ...problemResponses(404) },
      },
    },
    (request, reply) => {
      reply.header('cache-control', 'no-store');
      return reader.random(mathRandomPick, drawn.get(request.raw)).then((entry) => {
        if (entry === null) throw notFound(NO_ENTRIES);
        sendEntry(reply, entry);
      });
    },
  );

  app.get(
    '/nonsense/status',
    {
      schema: {
        summary: 'Status of the database',
        description: 'For clients that cache the database: `revision` grows with every change.',
        tags: ['entries'],
        response: { 200: Status, ...NOT_MODIFIED },
      },
    },
    async (request, reply) => {
      const status = await reader.status();
      if (notModified(request, reply, revisionTag(status.revision), 'no-cache')) return reply;
      return status;
    },
  );

  app.get(
    '/nonsense/:id',
    {
      schema: {
        summary: 'One entry by UUID',
        description: 'A visible entry. Revalidate with `If-None-Match`.',
        tags: ['entries'],
        params: EntryPathParams,
        response: { 200: Entry, ...NOT_MODIFIED, ...problemResponses(400, 404) },
      },
    },
    (request, reply) => {
      const uuid = entryUuid(request.params.id);
      return reader.find(uuid).then((found) => {
        if (found === null) throw notFound(`No entry has the UUID ${uuid}.`);
        if (!notModified(request, reply, tagOf(found.revision), 'no-cache')) sendEntry(reply, found.entry);
      });
    },
  );
};

export default nonsenseRoutes;
