/** Admin: create, edit, hide, show and delete entries. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { checkEntryText } from '../../domain/text.ts';
import { badRequest, HttpProblem, notFound, requireJson } from '../../http/problem.ts';
import { AdminEntry, EntryChangeBody, EntryUuidParams, NewEntryBody } from '../../schemas/admin.ts';
import { problemResponses } from '../../schemas/api.ts';
import type { EntryWrite } from '../../storage/entries.ts';

/** entryText applies the text rules the schema cannot (trimming, control characters, length after trimming). */
function entryText(raw: string): string {
  const checked = checkEntryText(raw);
  if (!checked.ok) throw badRequest(`The field "text" is not acceptable: ${checked.reason}.`, { field: 'text' });
  return checked.text;
}

function written(result: EntryWrite, uuid?: string) {
  if ('duplicateOf' in result) {
    throw new HttpProblem(409, `The same text already exists as entry ${result.duplicateOf}.`, { existing: result.duplicateOf });
  }
  if ('notFound' in result) throw notFound(`No entry has the UUID ${uuid}.`);
  return result.entry;
}

const adminEntryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { entries } = app.storage;

  app.get(
    '/nonsense/:uuid',
    { schema: { summary: 'An entry in any state', tags: ['admin'], params: EntryUuidParams, response: { 200: AdminEntry, ...problemResponses(400, 404) } } },
    async (request) => {
      const uuid = request.params.uuid.toLowerCase();
      const entry = await entries.findAny(uuid);
      if (entry === null) throw notFound(`No entry has the UUID ${uuid}.`);
      return entry;
    },
  );

  app.post(
    '/nonsense',
    {
      schema: {
        summary: 'Add an entry',
        tags: ['admin'],
        body: NewEntryBody,
        response: { 201: AdminEntry, ...problemResponses(400, 409, 413, 415) },
      },
      preValidation: requireJson,
    },
    async (request, reply) => {
      const text = entryText(request.body.text);
      const timestamp = request.body.timestamp ?? Math.floor(Date.now() / 1000);
      const entry = written(await entries.create(text, timestamp, request.actor));
      return reply.code(201).send(entry);
    },
  );

  app.patch(
    '/nonsense/:uuid',
    {
      schema: {
        summary: 'Edit, hide or show an entry',
        tags: ['admin'],
        params: EntryUuidParams,
        body: EntryChangeBody,
        response: { 200: AdminEntry, ...problemResponses(400, 404, 409, 413, 415) },
      },
      preValidation: requireJson,
    },
    async (request) => {
      const uuid = request.params.uuid.toLowerCase();
      const { text, state } = request.body;
      const change = { ...(text === undefined ? {} : { text: entryText(text) }), ...(state === undefined ? {} : { state }) };
      return written(await entries.update(uuid, change, request.actor), uuid);
    },
  );

  app.delete(
    '/nonsense/:uuid',
    {
      schema: {
        summary: 'Delete an entry (and the reports on it)',
        tags: ['admin'],
        params: EntryUuidParams,
        response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const uuid = request.params.uuid.toLowerCase();
      if (!(await entries.remove(uuid, request.actor))) throw notFound(`No entry has the UUID ${uuid}.`);
      return reply.code(204).send(null);
    },
  );
};

export default adminEntryRoutes;
