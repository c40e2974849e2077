import type { Config } from '../config.ts';
import type { Storage } from '../storage/index.ts';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    storage: Storage;
  }
}
