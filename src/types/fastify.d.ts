import type { Config } from '../config.ts';
import type { CardService } from '../services/cards/index.ts';
import type { Storage } from '../storage/index.ts';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    storage: Storage;
    cards: CardService;
  }
}
