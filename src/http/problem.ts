/**
 * The error a handler or hook throws for an expected failure, and its usual constructors. The error
 * handler (plugins/problem.ts) answers it with its status, detail and headers, in the route's format.
 */
import type { FastifyRequest } from 'fastify';

/** HttpProblem is thrown by handlers for an expected failure; the error handler renders it. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly extensions: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }
}

export const badRequest = (detail: string, extensions?: Record<string, unknown>) => new HttpProblem(400, detail, extensions);
export const notFound = (detail: string) => new HttpProblem(404, detail);

/** methodNotAllowed is the 405 for `method` on `path`: `Allow` and the detail list the same methods. */
export function methodNotAllowed(method: string, path: string, allowed: readonly string[]): HttpProblem {
  const list = allowed.join(', ');
  return new HttpProblem(405, `${method} is not allowed on ${shortPath(path)}; allowed: ${list}.`, {}, { allow: list });
}

/**
 * requireBodyType is a `preValidation` hook answering 415 unless the request declares one of `types`
 * as its body's type. Before validation, so a body of the wrong kind is a 415, not a schema 400.
 */
export function requireBodyType(...types: string[]) {
  const described = types.join(', ');
  return async (request: FastifyRequest): Promise<void> => {
    const type = request.headers['content-type'] ?? '';
    const base = type.split(';', 1)[0]!.trim().toLowerCase();
    if (!types.includes(base)) {
      throw new HttpProblem(415, `Send the body as ${described}; got ${type === '' ? 'no content type' : `"${type.slice(0, 60)}"`}.`);
    }
  };
}

/** requireJson is the `preValidation` hook of routes that take a JSON body. */
export const requireJson = requireBodyType('application/json');

/** shortPath is a request path as a detail quotes it: cut to 120 characters. */
export function shortPath(path: string): string {
  return path.length > 120 ? `${path.slice(0, 117)}...` : path;
}
