/**
 * The one guard of the admin API: `Authorization: Bearer <token>`, checked against the stored hashes
 * on every request (so a revoked token stops working at once). Registered inside the admin scope only.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { problemResponse } from '../schemas/api.ts';
import { HttpProblem } from '../http/problem.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The label of the admin token that authenticated the request. */
    actor: string;
  }
}

const REALM = 'Bearer realm="nonsense-admin"';

/** The name of the bearer scheme in the OpenAPI document (`components.securitySchemes`). */
export const BEARER_SCHEME = 'bearerAuth';

function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (header === undefined) return null;
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
  return match ? match[1]! : '';
}

/** adminAuth adds the guard to the scope it is called in. */
export function adminAuth(app: FastifyInstance): void {
  app.decorateRequest('actor', '');
  // Every route behind the guard says so in the API description: the scheme, and its 401.
  app.addHook('onRoute', (route) => {
    if (route.schema === undefined || route.schema.hide) return;
    const response = { ...(route.schema.response as Record<string, unknown> | undefined), 401: problemResponse(401) };
    route.schema = { ...route.schema, security: [{ [BEARER_SCHEME]: [] }], response };
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const token = bearerToken(request);
    if (token === null) {
      throw new HttpProblem(401, 'The admin API needs a token: send "Authorization: Bearer <token>" (create one with `nonsense token create <label>`).', {}, { 'www-authenticate': REALM });
    }
    const label = token === '' ? null : await app.storage.tokens.verify(token);
    if (label === null) {
      throw new HttpProblem(401, 'The token is not valid or has been revoked.', {}, { 'www-authenticate': `${REALM}, error="invalid_token"` });
    }
    request.actor = label;
  });
}
