/**
 * The OpenAPI 3.1 document, generated from the route schemas, at `/openapi.json`, and an interactive
 * reference at `/docs`. The reference's assets are served by this process; nothing loads from elsewhere.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export default fp(
  async function docsPlugin(app: FastifyInstance) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: app.config.appName,
          version: '1.0.0',
          description:
            'A read-mostly service over a database of short text entries. Every error is `application/problem+json` (RFC 9457).',
        },
        tags: [
          { name: 'entries', description: 'Random entry, entry by UUID, status' },
          { name: 'reference', description: 'Custom emojis and variables' },
          { name: 'operations', description: 'Health and readiness' },
        ],
      },
    });
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { validatorUrl: null, docExpansion: 'list', deepLinking: true },
      staticCSP: true,
    });
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  },
  { name: 'docs', dependencies: [] },
);
