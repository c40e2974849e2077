/** Admin: the report queue and the moderation log. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { encodeReportCursor, parseReportCursor } from '../../domain/reports.ts';
import { notModified, weakContentTag } from '../../http/cache.ts';
import { nextPageLink } from '../../plugins/links.ts';
import { badRequest, HttpProblem, notFound } from '../../http/problem.ts';
import { DEFAULT_PAGE_SIZE, LogQuery, LogRecord, NEXT_PAGE_HEADERS, Report, ReportIdParams, ReportQuery, ReportWithEntry } from '../../schemas/admin.ts';
import { NOT_MODIFIED, problemResponses } from '../../schemas/api.ts';
import type { Report as StoredReport, Resolution } from '../../storage/reports.ts';

/** The API's report: times as `createdAt`/`resolvedAt`, in Unix seconds like every time in the API. */
function apiReport<T extends StoredReport>({ createdAtS, resolvedAtS, ...rest }: T) {
  return { ...rest, createdAt: createdAtS, resolvedAt: resolvedAtS };
}

function resolved(result: Resolution, id: string) {
  if ('notFound' in result) throw notFound(`No report has the id ${id}.`);
  if ('alreadyResolved' in result) throw new HttpProblem(409, `The report is already ${result.alreadyResolved}.`);
  return apiReport(result.report);
}

const moderationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { reports, moderationLog } = app.storage;

  app.get(
    '/reports',
    {
      schema: {
        summary: 'Reports with their entries, oldest first',
        description:
          'A page at a time: the next page is in the `Link` header. The answer has a weak `ETag` of its content and answers `If-None-Match` with 304, so a moderation page ' +
          'that reads the open queue again every few seconds costs little while it is unchanged (reports are no public change: they are not in the change feed).',
        tags: ['admin'],
        querystring: ReportQuery,
        response: { 200: Type.Array(ReportWithEntry, { description: 'A page of reports', headers: NEXT_PAGE_HEADERS }), ...NOT_MODIFIED, ...problemResponses(400) },
      },
    },
    async (request, reply) => {
      const { status = 'open', limit = DEFAULT_PAGE_SIZE, cursor } = request.query;
      const after = cursor === undefined ? undefined : parseReportCursor(cursor);
      if (after === null) throw badRequest('The parameter "cursor" is not one this service gave out; follow the `Link` header of the previous page.', { parameter: 'cursor' });
      const page = await reports.page(status, { limit, ...(after ? { after } : {}) });
      const link = page.next === null ? '' : nextPageLink(request, encodeReportCursor(page.next));
      if (link !== '') reply.header('link', link);
      const body = page.reports.map(apiReport);
      // Reports change no revision, so the tag is the page's content (and where the next one starts).
      if (notModified(request, reply, weakContentTag(JSON.stringify(body), link), 'no-store')) return reply;
      return body;
    },
  );

  for (const action of ['accept', 'dismiss'] as const) {
    app.post(
      `/reports/:id/${action}`,
      {
        schema: {
          summary: action === 'accept' ? 'Accept a report: its entry is hidden at once, with every open report on it' : 'Dismiss a report',
          tags: ['admin'],
          params: ReportIdParams,
          response: { 200: Report, ...problemResponses(400, 404, 409) },
        },
      },
      async (request) => {
        const id = request.params.id.toLowerCase();
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
        querystring: LogQuery,
        response: { 200: Type.Array(LogRecord), ...problemResponses(400) },
      },
    },
    async (request) => (await moderationLog.list(request.query.limit ?? 100, request.query.before)).map(({ atS, ...rest }) => ({ ...rest, at: atS })),
  );
};

export default moderationRoutes;
