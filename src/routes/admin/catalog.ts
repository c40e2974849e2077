/** Admin: server variables and custom emoji images. */
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { checkEmojiImage, MAX_EMOJI_BYTES, MAX_EMOJI_SIDE, sniffImageType, type ImageType } from '../../domain/emojis.ts';
import { checkLine } from '../../domain/text.ts';
import { serverVariableProblem } from '../../domain/variables.ts';
import { badRequest, requireBodyType, requireJson, notFound } from '../../http/problem.ts';
import { EmojiImageBody, EmojiNameParams, IMAGE_TYPES, ServerVariable, StoredEmoji, VariableBody, VariableNameParams } from '../../schemas/admin.ts';
import { problemResponses } from '../../schemas/api.ts';

/** variableName applies the variable grammar to a name from the path: `$NAME$` or `${name}`, and not a client-side one. */
function variableName(name: string): string {
  const problem = serverVariableProblem(name);
  if (problem !== null) throw badRequest(problem, { parameter: 'name' });
  return name;
}

/** line applies the single-line rule to a trimmed text of the variable body. */
function line(raw: string, field: string): string {
  const checked = checkLine(raw);
  if (!checked.ok) throw badRequest(`The field "${field}" is not acceptable: ${checked.reason}.`, { field });
  return checked.text;
}

/** checkImage accepts only bytes that are the type the request says and pass the emoji image rules (domain/emojis.ts). */
function checkImage(declared: string, bytes: Buffer): ImageType {
  const sniffed = sniffImageType(bytes);
  if (sniffed !== null && sniffed !== declared) throw badRequest(`The body is a ${sniffed} image, but the request says ${declared}.`);
  const checked = checkEmojiImage(bytes);
  if (!checked.ok) throw badRequest(`The body is ${checked.reason}.`);
  return checked.type;
}

const adminCatalogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { variables, emojis } = app.storage;

  app.put(
    '/variables/:name',
    {
      schema: {
        summary: 'Create or replace a server variable',
        description: 'Entries using the variable show one of its values, picked at random for each occurrence, at once.',
        tags: ['admin'],
        params: VariableNameParams,
        body: VariableBody,
        response: { 200: ServerVariable, 201: ServerVariable, ...problemResponses(400, 413, 415) },
      },
      preValidation: requireJson,
    },
    async (request, reply) => {
      const name = variableName(request.params.name);
      const description = checkLine(request.body.description, true);
      if (!description.ok) throw badRequest(`The field "description" is not acceptable: ${description.reason}.`, { field: 'description' });
      const values = request.body.values.map((value, index) => line(value, `values[${index}]`));
      const outcome = await variables.put({ name, description: description.text, values }, request.actor);
      return reply.code(outcome === 'created' ? 201 : 200).send({ name, scope: 'server' as const, description: description.text, values });
    },
  );

  app.delete(
    '/variables/:name',
    {
      schema: {
        summary: 'Delete a server variable',
        tags: ['admin'],
        params: VariableNameParams,
        response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const name = variableName(request.params.name);
      if (!(await variables.remove(name, request.actor))) throw notFound(`There is no server variable ${name}.`);
      return reply.code(204).send(null);
    },
  );

  app.register(async (images) => {
    images.addContentTypeParser(IMAGE_TYPES, { parseAs: 'buffer', bodyLimit: MAX_EMOJI_BYTES }, (_request, body, done) => done(null, body));
    images.withTypeProvider<TypeBoxTypeProvider>().put(
      '/emojis/:name',
      {
        schema: {
          summary: 'Create or replace a custom emoji image',
          description: `The body is the image: PNG, GIF or WebP, at most ${MAX_EMOJI_BYTES / 1024} KiB and ${MAX_EMOJI_SIDE} pixels a side, checked by its content.`,
          tags: ['admin'],
          params: EmojiNameParams,
          consumes: IMAGE_TYPES,
          body: EmojiImageBody,
          response: { 200: StoredEmoji, 201: StoredEmoji, ...problemResponses(400, 413, 415) },
        },
        bodyLimit: MAX_EMOJI_BYTES,
        preValidation: requireBodyType(...IMAGE_TYPES),
      },
      async (request, reply) => {
        const { name } = request.params;
        const declared = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
        const type = checkImage(declared, request.body);
        const outcome = await emojis.put(name, type, new Uint8Array(request.body), request.actor);
        return reply.code(outcome === 'created' ? 201 : 200).send({ name, code: `:${name}:`, contentType: type });
      },
    );
  });

  app.delete(
    '/emojis/:name',
    {
      schema: {
        summary: 'Delete a custom emoji',
        tags: ['admin'],
        params: EmojiNameParams,
        response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      if (!(await emojis.remove(name, request.actor))) throw notFound(`There is no custom emoji :${name}:.`);
      return reply.code(204).send(null);
    },
  );
};

export default adminCatalogRoutes;
