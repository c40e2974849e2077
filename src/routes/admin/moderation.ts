/** Admin: the report queue and the moderation log. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { parseUuid } from '../../domain/uuid.ts';
import { badRequest, HttpProblem, notFound } from '../../plugins/problem.ts';
import { problemResponses } from '../../schemas/api.ts';
import type { Resolution } from '../../storage/reports.ts';
import { AdminEntry } from './entries.ts';

const ReportFields = {
  id: Type.String({ format: 'uuid' }),
  entryUuid: Type.String({ format: 'uuid' }),
  reason: Type.String(),
  details: Type.Union([Type.String(), Type.Null()]),
  status: Type.Union([Type.Literal('open'), Type.Literal('accepted'), Type.Literal('dismissed')]),
  createdAt: Type.Integer({ description: 'Unix seconds.' }),
  resolvedAt: Type.Union([Type.Integer(), Type.Null()]),
  resolvedBy: Type.Union([Type.String(), Type.Null()], { description: "The label of the moderator's token." }),
};
const Report = Type.Object(ReportFields, { title: 'Report' });
const ReportWithEntry = Type.Object({ ...ReportFields, entry: AdminEntry }, { title: 'ReportWithEntry' });

const LogRecord = Type.Object(
  {
    id: Type.Integer(),
    at: Type.Integer({ description: 'Unix milliseconds.' }),
    actor: Type.String(),
    action: Type.String({ examples: ['entry.create', 'entry.edit', 'entry.hide', 'entry.show', 'entry.delete', 'variable.put', 'emoji.put', 'report.accept'] }),
    target: Type.String(),
    details: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
  },
  { title: 'LogRecord' },
);

const STATUSES = ['open', 'accepted', 'dismissed'] as const;

function resolved(result: Resolution, id: string) {
  if ('notFound' in result) throw notFound(`No report has the id ${id}.`);
  if ('alreadyResolved' in result) throw new HttpProblem(409, `The report is already ${result.alreadyResolved}.`);
  return result.report;
}

const moderationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { reports, moderationLog } = app.storage;
  const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

  app.get(
    '/reports',
    {
      schema: {
        summary: 'Reports with their entries, oldest first',
        tags: ['admin'],
        querystring: Type.Object({ status: Type.Optional(Type.String({ description: 'open (default), accepted or dismissed' })) }),
        response: { 200: Type.Array(ReportWithEntry), ...problemResponses(400, 401) },
      },
    },
    async (request) => {
      const status = request.query.status ?? 'open';
      if (!(STATUSES as readonly string[]).includes(status)) throw badRequest(`The parameter "status" must be one of ${STATUSES.join(', ')}.`);
      return reports.list(status as (typeof STATUSES)[number]);
    },
  );

  for (const action of ['accept', 'dismiss'] as const) {
    app.post(
      `/reports/:id/${action}`,
      {
        schema: {
          summary: action === 'accept' ? 'Accept a report: its entry is hidden at once, with every open report on it' : 'Dismiss a report',
          tags: ['admin'],
          params: IdParams,
          response: { 200: Report, ...problemResponses(400, 401, 404, 409) },
        },
      },
      async (request) => {
        const id = parseUuid(request.params.id);
        if (id === null) throw badRequest(`"${request.params.id.slice(0, 60)}" is not a report id.`);
        return resolved(await reports[action](id, request.actor), id);
      },
    );
  }

  app.get(
    '/log',
    {
      schema: {
        summary: 'The moderation log, newest first',
        tags: ['admin'],
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
          before: Type.Optional(Type.Integer({ minimum: 1, description: 'Only records with a smaller id (paging).' })),
        }),
        response: { 200: Type.Array(LogRecord), ...problemResponses(400, 401) },
      },
    },
    async (request) => moderationLog.list(request.query.limit ?? 100, request.query.before),
  );
};

export default moderationRoutes;
