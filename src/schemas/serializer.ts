/**
 * How response schemas serialise: Fastify's own compiler (fast-json-stringify, through
 * @fastify/fast-json-stringify-compiler), deferred to the first answer of each route and status
 * (runtime/compile-later.ts). fast-json-stringify builds an Ajv of its own for each schema with a
 * choice in it (anyOf, if/then), which made response schemas the larger part of the compiling
 * before the first answer.
 */
import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler';
import { compileLater } from '../runtime/compile-later.ts';

const eager = SerializerSelector();

/** buildSerializer is Fastify's `schemaController.compilersFactory.buildSerializer`, compiling each schema on its first use. */
export const buildSerializer: SerializerFactory = (externalSchemas, serializerOptions) => {
  const compiler = eager(externalSchemas, serializerOptions);
  return (route) => {
    const serializer = compileLater(() => compiler(route));
    return (data) => serializer()(data);
  };
};
