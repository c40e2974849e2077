/** `POST /api/v1/nonsense/report`: a reader reports an entry. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { parseReport } from '../../domain/admin-input.ts';
import { assertJsonBody, badRequest, notFound } from '../../plugins/problem.ts';
import { problemResponses } from '../../schemas/api.ts';
import { REPORT_REASONS } from '../../storage/reports.ts';

export const REPORT_BODY_LIMIT = 16 * 1024;

const ReportBody = Type.Object({
  entryUuid: Type.String({ format: 'uuid' }),
  reason: Type.Union(REPORT_REASONS.map((r) => Type.Literal(r))),
  details: Type.Optional(Type.String({ maxLength: 1000, description: 'Free text; meant for reason `other`.' })),
});

const ReportCreated = Type.Object({
  id: Type.String({ format: 'uuid' }),
  entryUuid: Type.String({ format: 'uuid' }),
  reason: Type.String(),
  status: Type.Literal('open'),
});

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
      onRequest: app.reportLimit,
      // The schema documents the body; parseReport checks it with messages that name the field.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      assertJsonBody(request);
      const parsed = parseReport(request.body);
      if (!parsed.ok) throw badRequest(parsed.detail);
      const { entryUuid, reason, details } = parsed.value;
      const report = await app.storage.reports.create(entryUuid, reason, details);
      if (report === null) throw notFound(`No entry has the UUID ${entryUuid}.`);
      reply.code(201).header('cache-control', 'no-store');
      return { id: report.id, entryUuid: report.entryUuid, reason: report.reason, status: 'open' as const };
    },
  );
};

export default reportRoutes;
