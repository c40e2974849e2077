/** Liveness and readiness, for process managers and load balancers. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { pendingMigrations, ping } from '../db/database.ts';
import { setRouteClass } from '../http/route-classes.ts';
import { sendProblem } from '../plugins/send-problem.ts';

const Health = Type.Object({ status: Type.Literal('ok') });

const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  setRouteClass(app, 'operations');
  app.get(
    '/healthz',
    { schema: { summary: 'Liveness: the process answers', tags: ['operations'], response: { 200: Health } } },
    async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      return { status: 'ok' as const };
    },
  );

  app.get(
    '/readyz',
    { schema: { summary: 'Readiness: the database answers and its schema is current', tags: ['operations'], response: { 200: Health } } },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      try {
        await ping(app.storage.database);
        const pending = await pendingMigrations(app.storage.database);
        if (pending.length > 0) {
          return sendProblem(reply, 503, `The database schema is outdated (${pending.length} migration(s) pending); run \`nonsense migrate\`.`);
        }
      } catch (error) {
        request.log.warn({ reqId: request.id, err: error }, 'readiness check failed');
        return sendProblem(reply, 503, 'The database does not answer.');
      }
      return { status: 'ok' as const };
    },
  );
};

export default healthRoutes;
