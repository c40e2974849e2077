/** `POST /api/v1/nonsense/report`: a reader reports an entry. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { REPORT_BODY_LIMIT, REPORT_REASONS } from '../../domain/reports.ts';
import { checkDetails } from '../../domain/text.ts';
import { badRequest, methodNotAllowed, notFound, requireJson } from '../../http/problem.ts';
import { problemResponses, ReportBody, ReportCreated } from '../../schemas/api.ts';


const reportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/nonsense/report',
    {
      schema: {
        summary: 'Report an entry',
        description: `JSON body, at most 16 KiB. Rate-limited per address (RATE_LIMIT_REPORT). Reasons: ${REPORT_REASONS.join(', ')}.`,
        tags: ['reports'],
        body: ReportBody,
        response: { 201: ReportCreated, ...problemResponses(400, 404, 413, 415, 429) },
      },
      bodyLimit: REPORT_BODY_LIMIT,
      preValidation: requireJson,
    },
    async (request, reply) => {
      const { reason } = request.body;
      const entryUuid = request.body.entryUuid.toLowerCase();
      const details = checkDetails(request.body.details ?? '');
      if (!details.ok) throw badRequest(`The field "details" is not acceptable: ${details.reason}.`, { field: 'details' });
      // Only a well-formed report spends the budget: a client whose reports are refused (400, 413,
      // 415) is told why and can correct itself without being locked out.
      await app.reportLimit?.(request, reply);
      const report = await app.storage.reports.create(entryUuid, reason, details.text);
      if (report === null) throw notFound(`No entry has the UUID ${entryUuid}.`);
      reply.code(201).header('cache-control', 'no-store');
      return { id: report.id, entryUuid: report.entryUuid, reason: report.reason, status: 'open' as const };
    },
  );

  // Without this, GET would reach the by-UUID route and answer that "report" is not a UUID.
  app.route({
    method: ['GET', 'PUT', 'PATCH', 'DELETE'],
    url: '/nonsense/report',
    schema: { hide: true },
    handler: async (request) => {
      throw methodNotAllowed(request.method, request.url.split('?', 1)[0]!, ['POST']);
    },
  });
};

export default reportRoutes;
