import type { Config } from '../config.ts';
import type { FastLane } from '../plugins/fast-lane.ts';
import type { CardService } from '../services/cards/index.ts';
import type { EntryService } from '../services/entries/index.ts';
import type { ReadWorkers } from '../services/read-workers/index.ts';
import type { Storage } from '../storage/index.ts';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    storage: Storage;
    cards: CardService;
    /** Every public read of one entry, and the status (services/entries). */
    entryService: EntryService;
    /** The hottest reads, answered before Fastify when ready (plugins/fast-lane.ts). */
    fastLane: FastLane;
    /** The export worker thread, for exports from an SQLite file; null where exports stay on the event loop. */
    readWorkers: ReadWorkers | null;
  }
}
