/** Admin: create, edit, hide, show and delete entries. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { parseEntryChange, parseNewEntry } from '../../domain/admin-input.ts';
import { parseUuid } from '../../domain/uuid.ts';
import { assertJsonBody, badRequest, HttpProblem, notFound } from '../../plugins/problem.ts';
import { problemResponses } from '../../schemas/api.ts';
import type { EntryWrite } from '../../storage/entries.ts';

export const AdminEntry = Type.Object(
  {
    uuid: Type.String({ format: 'uuid' }),
    text: Type.String({ description: 'The raw text, variables unreplaced.' }),
    state: Type.Union([Type.Literal('visible'), Type.Literal('hidden')]),
    timestamp: Type.Integer(),
  },
  { title: 'AdminEntry' },
);

const UuidParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });

function uuidOf(raw: string): string {
  const uuid = parseUuid(raw);
  if (uuid === null) throw badRequest(`"${raw.slice(0, 60)}" is not a UUID.`);
  return uuid;
}

function written(result: EntryWrite, uuid?: string) {
  if ('duplicateOf' in result) {
    throw new HttpProblem(409, `The same text already exists as entry ${result.duplicateOf}.`, { existing: result.duplicateOf });
  }
  if ('notFound' in result) throw notFound(`No entry has the UUID ${uuid}.`);
  return result.entry;
}

const documentedOnly = { validatorCompiler: () => () => true };

const adminEntryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { entries } = app.storage;

  app.get(
    '/nonsense/:uuid',
    { schema: { summary: 'An entry in any state', tags: ['admin'], params: UuidParams, response: { 200: AdminEntry, ...problemResponses(400, 401, 404) } } },
    async (request) => {
      const uuid = uuidOf(request.params.uuid);
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
        body: Type.Object({ text: Type.String({ minLength: 1, maxLength: 2000 }), timestamp: Type.Optional(Type.Integer({ minimum: 0 })) }),
        response: { 201: AdminEntry, ...problemResponses(400, 401, 409, 415) },
      },
      ...documentedOnly,
    },
    async (request, reply) => {
      assertJsonBody(request);
      const parsed = parseNewEntry(request.body, Math.floor(Date.now() / 1000));
      if (!parsed.ok) throw badRequest(parsed.detail);
      const entry = written(await entries.create(parsed.value.text, parsed.value.timestamp, request.actor));
      return reply.code(201).send(entry);
    },
  );

  app.patch(
    '/nonsense/:uuid',
    {
      schema: {
        summary: 'Edit, hide or show an entry',
        tags: ['admin'],
        params: UuidParams,
        body: Type.Object({ text: Type.Optional(Type.String()), state: Type.Optional(Type.Union([Type.Literal('visible'), Type.Literal('hidden')])) }),
        response: { 200: AdminEntry, ...problemResponses(400, 401, 404, 409, 415) },
      },
      ...documentedOnly,
    },
    async (request) => {
      const uuid = uuidOf(request.params.uuid);
      assertJsonBody(request);
      const parsed = parseEntryChange(request.body);
      if (!parsed.ok) throw badRequest(parsed.detail);
      return written(await entries.update(uuid, parsed.value, request.actor), uuid);
    },
  );

  app.delete(
    '/nonsense/:uuid',
    { schema: { summary: 'Delete an entry (and the reports on it)', tags: ['admin'], params: UuidParams, response: { 204: Type.Null(), ...problemResponses(400, 401, 404) } } },
    async (request, reply) => {
      const uuid = uuidOf(request.params.uuid);
      if (!(await entries.remove(uuid, request.actor))) throw notFound(`No entry has the UUID ${uuid}.`);
      return reply.code(204).send(null);
    },
  );
};

export default adminEntryRoutes;
