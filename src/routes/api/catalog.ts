/** Public reference lists: custom emojis (with their images) and variables. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EMOJI_NAME_SOURCE, IMAGE_EXTENSIONS, type ImageType } from '../../domain/emojis.ts';
import { CLIENT_VARIABLES } from '../../domain/variables.ts';
import { notModified, revisionTag, strongTag } from '../../http/cache.ts';
import { notFound } from '../../http/problem.ts';
import { Emoji, EmojiImageParams, NOT_MODIFIED, problemResponses, Variable } from '../../schemas/api.ts';
import { compareCodePoints } from '../../storage/variables.ts';
import { absoluteBase } from '../../plugins/links.ts';

/** An emoji image's file name: `<name>.<extension>`. */
const EMOJI_FILE = new RegExp(`^(${EMOJI_NAME_SOURCE})\\.([a-z]+)$`);

const Binary = (type: string) => Type.Unsafe<Buffer>({ type: 'string', contentMediaType: type });

const catalogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { emojis, variables, cache } = app.storage;

  app.get(
    '/emojis',
    {
      schema: {
        summary: 'Custom emojis',
        description: 'Sorted by name. Texts refer to an emoji as `:name:`.',
        tags: ['reference'],
        response: { 200: Type.Array(Emoji), ...NOT_MODIFIED },
      },
    },
    async (request, reply) => {
      const revision = await cache.current();
      const base = absoluteBase(request, reply);
      // The links depend on the host the client used, so the tag does too.
      if (notModified(request, reply, revisionTag(revision, hashHost(base)), 'no-cache')) return reply;
      return (await emojis.list()).map((emoji) => ({
        name: emoji.name,
        code: `:${emoji.name}:`,
        url: `${base}/api/v1/emojis/${emoji.name}.${IMAGE_EXTENSIONS[emoji.contentType as ImageType] ?? 'png'}`,
      }));
    },
  );

  app.get(
    '/emojis/:file',
    {
      schema: {
        summary: "A custom emoji's image",
        tags: ['reference'],
        params: EmojiImageParams,
        response: {
          200: { description: 'The image', content: Object.fromEntries(Object.keys(IMAGE_EXTENSIONS).map((type) => [type, { schema: Binary(type) }])) },
          ...NOT_MODIFIED,
          ...problemResponses(404),
        },
      },
    },
    async (request, reply) => {
      const match = EMOJI_FILE.exec(request.params.file);
      const emoji = match ? await emojis.find(match[1]!) : null;
      if (match === null || emoji === null) throw notFound(`No custom emoji image is at ${request.params.file.slice(0, 60)}; see /api/v1/emojis.`);
      const extension = IMAGE_EXTENSIONS[emoji.contentType as ImageType];
      if (match[2] !== extension) throw notFound(`The emoji ${emoji.name} is a ${extension?.toUpperCase()} image: /api/v1/emojis/${emoji.name}.${extension}.`);
      // Uploads are checked by their content, but an image opened directly is a document of this
      // origin: should a browser ever take one for something else, it may run and load nothing.
      reply.header('content-security-policy', "default-src 'none'; sandbox");
      // The one answer with a modification time of its own: an image changes only when it is stored anew.
      if (notModified(request, reply, strongTag(emoji.sha256.slice(0, 32)), 'public, max-age=3600', emoji.updatedAt)) return reply;
      return reply.type(emoji.contentType).send(Buffer.from(emoji.image.buffer, emoji.image.byteOffset, emoji.image.byteLength));
    },
  );

  app.get(
    '/variables',
    {
      schema: {
        summary: 'Variables used in entries',
        description:
          'Sorted by name. Server variables (with their values) are replaced by the server; client variables stay in the text for the client to replace.',
        tags: ['reference'],
        response: { 200: Type.Array(Variable), ...NOT_MODIFIED },
      },
    },
    async (request, reply) => {
      if (notModified(request, reply, revisionTag(await cache.current()), 'no-cache')) return reply;
      const server = (await variables.list()).map((v) => ({ name: v.name, scope: 'server' as const, description: v.description, values: v.values }));
      const client = CLIENT_VARIABLES.map((v) => ({ name: v.name, scope: 'client' as const, description: v.description }));
      return [...server, ...client].sort((a, b) => compareCodePoints(a.name, b.name));
    },
  );
};

/** A short, stable tag of the host part of the links. */
function hashHost(base: string): string {
  let hash = 0;
  for (let i = 0; i < base.length; i++) hash = (Math.imul(hash, 31) + base.charCodeAt(i)) | 0;
  return (hash >>> 0).toString(36);
}

export default catalogRoutes;
