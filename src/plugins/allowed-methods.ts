/** 405 discovery: which other methods a path answers, for `Allow` when a request's method has no route. */
import type { FastifyInstance } from 'fastify';

const ALLOW_CANDIDATES = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** allowedMethods lists the methods other than `method` that have a route at `path` (empty: the path is unknown). */
export function allowedMethods(app: FastifyInstance, method: string, path: string): string[] {
  return ALLOW_CANDIDATES.filter((candidate) => candidate !== method && app.findRoute({ method: candidate, url: path }) !== null);
}
