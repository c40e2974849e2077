/**
 * Public entry endpoints: random, status and by UUID. Random and by-UUID are the hottest paths of the
 * service: they answer from the entry cache (src/storage/entry-cache.ts) with JSON prepared ahead,
 * synchronously when its snapshot is current, else through the database. The body is the response
 * schema's serialisation byte for byte (formats/entry.ts; test/formats/entry-json.test.ts checks it),
 * so the schema still documents it while the serialiser is skipped.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { parseUuid, uuidSegment } from '../../domain/uuid.ts';
import { mathRandomPick } from '../../domain/variables.ts';
import { ENTRY_JSON_TYPE, EntryJsonTemplate, entryJsonEncoder } from '../../formats/entry.ts';
import { watchCache } from '../../metrics/registry.ts';
import { notModified, revisionTag } from '../../http/cache.ts';
import { notFound } from '../../http/problem.ts';
import { Entry, EntryPathParams, NOT_MODIFIED, problemResponses, Status } from '../../schemas/api.ts';
import { EntryCache, type EntrySnapshot, type PreparedEntry } from '../../storage/entry-cache.ts';
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

/** entryBody is a prepared entry's JSON, its server variables filled in. */
const entryBody = (entry: PreparedEntry<EntryJsonTemplate>) => (entry instanceof EntryJsonTemplate ? entry.render(mathRandomPick) : entry);

/** sendEntry sends a prepared entry as the JSON response. */
function sendEntry(reply: FastifyReply, entry: PreparedEntry<EntryJsonTemplate>): void {
  reply.header('content-type', ENTRY_JSON_TYPE).send(entryBody(entry));
}

/**
 * laneAnswer is the fast lane's answer with snapshot entry `i`: its JSON, and the JSON's length in
 * bytes when that needs no pass over it (ASCII, as most entries are).
 */
function laneAnswer(snapshot: EntrySnapshot<EntryJsonTemplate>, i: number, headers: readonly string[]): LaneAnswer {
  const entry = snapshot.at(i);
  if (entry instanceof EntryJsonTemplate) {
    const body = entry.render(mathRandomPick);
    return { status: 200, headers, body, bytes: entry.ascii ? body.length : undefined };
  }
  return { status: 200, headers, body: entry, bytes: snapshot.asciiLength(i) };
}

/** The headers of a random entry in the fast lane, besides the common ones. */
const RANDOM_HEADERS = ['content-type', ENTRY_JSON_TYPE, 'cache-control', 'no-store'];

const nonsenseRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { entries, variables, cache } = app.storage;
  const entryCache = new EntryCache(cache, entries, variables, {
    makeEncoder: entryJsonEncoder,
    templateSize: (template: EntryJsonTemplate) => template.size(),
    snapshotBytes: app.config.entryCacheBytes,
    lookupBytes: app.config.entryLookupCacheBytes,
  });
  const unwatch = [
    watchCache('entry_snapshot', () => {
      const stats = entryCache.stats();
      return { bytes: stats.snapshotBytes, items: stats.snapshotEntries };
    }),
    watchCache('entry_lookups', () => {
      const stats = entryCache.stats();
      return { bytes: stats.lookupBytes, items: stats.lookupEntries };
    }),
  ];
  app.addHook('onClose', async () => {
    entryCache.close();
    for (const stop of unwatch) stop();
  });

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

  // The fast lane (plugins/fast-lane.ts) answers both from the current snapshot, before Fastify; the
  // routes below answer whatever it leaves: the database path, errors, HEAD, query strings.
  const random = `${app.prefix}/nonsense/random`;
  app.fastLane.get(random, random, () => {
    const snapshot = entryCache.snapshotNow();
    if (snapshot === null || snapshot.count === 0) return undefined;
    return laneAnswer(snapshot, mathRandomPick(snapshot.count), RANDOM_HEADERS);
  });
  const byUuid = `${app.prefix}/nonsense/`;
  app.fastLane.get(
    byUuid,
    `${app.prefix}/nonsense/:id`,
    (path, request) => {
      const snapshot = entryCache.snapshotNow();
      const uuid = parseUuid(path.slice(byUuid.length));
      if (snapshot === null || uuid === null) return undefined;
      const i = snapshot.find(uuid);
      if (i === -1) return undefined;
      const { tag, headers, notModifiedHeaders } = taggedOf(snapshot.revision);
      if (laneNotModified(request, tag)) return { status: 304, headers: notModifiedHeaders, body: '' };
      return laneAnswer(snapshot, i, headers);
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
    (_request, reply) => {
      reply.header('cache-control', 'no-store');
      const snapshot = entryCache.snapshotNow();
      if (snapshot !== null) {
        if (snapshot.count === 0) throw notFound(NO_ENTRIES);
        return sendEntry(reply, snapshot.at(mathRandomPick(snapshot.count)));
      }
      return entryCache.random(mathRandomPick).then((entry) => {
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
      const status = await entries.status();
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
      const snapshot = entryCache.snapshotNow();
      if (snapshot !== null) {
        const i = snapshot.find(uuid);
        if (i === -1) throw notFound(`No entry has the UUID ${uuid}.`);
        if (notModified(request, reply, tagOf(snapshot.revision), 'no-cache')) return;
        return sendEntry(reply, snapshot.at(i));
      }
      return entryCache.find(uuid).then((found) => {
        if (found === null) throw notFound(`No entry has the UUID ${uuid}.`);
        if (!notModified(request, reply, tagOf(found.revision), 'no-cache')) sendEntry(reply, found.entry);
      });
    },
  );
};

export default nonsenseRoutes;
