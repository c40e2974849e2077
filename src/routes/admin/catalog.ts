/** Admin: server variables and custom emoji images. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { imageSize } from 'image-size';
import { Type } from 'typebox';
import { EMOJI_NAME, parseVariableBody, parseVariableName } from '../../domain/admin-input.ts';
import { IMAGE_EXTENSIONS, sniffImageType, type ImageType } from '../../domain/images.ts';
import { assertJsonBody, badRequest, HttpProblem, notFound } from '../../plugins/problem.ts';
import { problemResponses, Variable } from '../../schemas/api.ts';

export const MAX_EMOJI_BYTES = 256 * 1024;
export const MAX_EMOJI_SIDE = 1024;
const IMAGE_TYPES = Object.keys(IMAGE_EXTENSIONS) as ImageType[];

const NameParams = Type.Object({ name: Type.String({ maxLength: 100 }) });

function emojiName(raw: string): string {
  if (!EMOJI_NAME.test(raw)) throw badRequest(`"${raw.slice(0, 60)}" is not an emoji name: use 2 to 32 of a-z, 0-9 and _.`);
  return raw;
}

/** checkImage accepts only bytes that are what they claim to be and decode to sane dimensions. */
function checkImage(declared: string, bytes: Buffer): ImageType {
  const sniffed = sniffImageType(bytes);
  if (sniffed === null) throw badRequest('The body is not a PNG, GIF or WebP image.');
  if (sniffed !== declared) throw badRequest(`The body is a ${sniffed} image, but the request says ${declared}.`);
  let size: { width?: number; height?: number };
  try {
    size = imageSize(bytes);
  } catch {
    throw badRequest(`The ${sniffed} image cannot be decoded.`);
  }
  const { width = 0, height = 0 } = size;
  if (width < 1 || height < 1 || width > MAX_EMOJI_SIDE || height > MAX_EMOJI_SIDE) {
    throw badRequest(`The image is ${width}×${height}; emojis must be 1 to ${MAX_EMOJI_SIDE} pixels on each side.`);
  }
  return sniffed;
}

const adminCatalogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { variables, emojis } = app.storage;

  app.put(
    '/variables/:name',
    {
      schema: {
        summary: 'Create or replace a server variable',
        description: 'The name is the token as written in texts, URL-encoded: `%24ANIMAL%24` for `$ANIMAL$`.',
        tags: ['admin'],
        params: NameParams,
        body: Type.Object({ description: Type.String(), values: Type.Array(Type.String(), { minItems: 1 }) }),
        response: { 200: Variable, 201: Variable, ...problemResponses(400, 401, 415) },
      },
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      const name = parseVariableName(request.params.name);
      if (!name.ok) throw badRequest(name.detail);
      assertJsonBody(request);
      const body = parseVariableBody(request.body);
      if (!body.ok) throw badRequest(body.detail);
      const outcome = await variables.put({ name: name.value, ...body.value }, request.actor);
      return reply.code(outcome === 'created' ? 201 : 200).send({ name: name.value, scope: 'server' as const, ...body.value });
    },
  );

  app.delete(
    '/variables/:name',
    { schema: { summary: 'Delete a server variable', tags: ['admin'], params: NameParams, response: { 204: Type.Null(), ...problemResponses(400, 401, 404) } } },
    async (request, reply) => {
      const name = parseVariableName(request.params.name);
      if (!name.ok) throw badRequest(name.detail);
      if (!(await variables.remove(name.value, request.actor))) throw notFound(`There is no server variable ${name.value}.`);
      return reply.code(204).send(null);
    },
  );

  app.register(async (images) => {
    images.addContentTypeParser(IMAGE_TYPES, { parseAs: 'buffer', bodyLimit: MAX_EMOJI_BYTES }, (_request, body, done) => done(null, body));
    images.put(
      '/emojis/:name',
      {
        schema: {
          summary: 'Create or replace a custom emoji image',
          description: `The body is the image: PNG, GIF or WebP, at most ${MAX_EMOJI_BYTES / 1024} KiB and ${MAX_EMOJI_SIDE} pixels a side, checked by its content.`,
          tags: ['admin'],
          params: NameParams,
          response: {
            200: Type.Object({ name: Type.String(), code: Type.String(), contentType: Type.String() }),
            201: Type.Object({ name: Type.String(), code: Type.String(), contentType: Type.String() }),
            ...problemResponses(400, 401, 413, 415),
          },
        },
        bodyLimit: MAX_EMOJI_BYTES,
      },
      async (request, reply) => {
        const name = emojiName((request.params as { name: string }).name);
        const declared = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
        if (!Buffer.isBuffer(request.body)) throw new HttpProblem(415, `Send the image as ${IMAGE_TYPES.join(', ')}.`);
        const type = checkImage(declared, request.body);
        const outcome = await emojis.put(name, type, new Uint8Array(request.body), request.actor);
        return reply.code(outcome === 'created' ? 201 : 200).send({ name, code: `:${name}:`, contentType: type });
      },
    );
  });

  app.delete(
    '/emojis/:name',
    { schema: { summary: 'Delete a custom emoji', tags: ['admin'], params: NameParams, response: { 204: Type.Null(), ...problemResponses(400, 401, 404) } } },
    async (request, reply) => {
      const name = emojiName(request.params.name);
      if (!(await emojis.remove(name, request.actor))) throw notFound(`There is no custom emoji :${name}:.`);
      return reply.code(204).send(null);
    },
  );
};

export default adminCatalogRoutes;
