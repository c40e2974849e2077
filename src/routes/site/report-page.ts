/**
 * `GET /nonsense/<uuid>/report` and its form's `POST`: reporting without JavaScript. (With JavaScript
 * the pages open a dialog that posts JSON to /api/v1/nonsense/report instead.) The POST checks the
 * same way and files the report with the same storage call as the API, under the same rate limit, then
 * redirects (303) to the page with a confirmation, so reloading never sends the report twice.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { parseUuid } from '../../domain/uuid.ts';
import { REPORT_BODY_LIMIT, REPORT_REASONS, type ReportReason } from '../../domain/reports.ts';
import { checkDetails, MAX_DETAILS_LENGTH } from '../../domain/text.ts';
import { displayText } from '../../domain/display-text.ts';
import { badRequest, notFound } from '../../http/problem.ts';
import { reasonFields } from '../../web/components.ts';
import { emojiFiles, entryHtml } from '../../web/entry-text.ts';
import { html } from '../../web/html.ts';
import { page, sendPage } from '../../web/layout.ts';
import { StringEnum } from '../../schemas/api.ts';

/** The form's fields: those of the API's report body but the entry, which is in the path. */
const ReportForm = Type.Object({
  reason: StringEnum<ReportReason>(REPORT_REASONS),
  details: Type.Optional(Type.String({ maxLength: MAX_DETAILS_LENGTH })),
});

function uuidOf(raw: string): string {
  const uuid = parseUuid(raw);
  if (uuid === null) throw badRequest(`"${raw.slice(0, 60)}" is not a UUID; expected the form 6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11.`);
  return uuid;
}

const reportPageRoutes: FastifyPluginAsync = async (app) => {
  const { appName } = app.config;

  // HTML forms post url-encoded bodies; only this plugin's routes accept them.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: REPORT_BODY_LIMIT }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  app.get('/nonsense/:id/report', { schema: { hide: true } }, async (request, reply) => {
    const uuid = uuidOf((request.params as { id: string }).id);
    const entry = await app.entryService.findEntry(uuid);
    if (entry === null) throw notFound(`No entry has the UUID ${uuid}.`);
    const sent = (request.query as Record<string, unknown>).sent === '1';
    const text = entryHtml(displayText(entry.text, await app.storage.variables.values(), uuid, appName), await emojiFiles(app.storage));
    const main = html`<h1>Report an entry</h1>
<blockquote class="entry-text report-quote" dir="auto">${text}</blockquote>
${
  sent
    ? html`<p class="notice notice-success" role="status">Thank you. Your report was sent; moderators will look at it.</p>
<p><a class="button" href="/nonsense/${uuid}">Back to the entry</a> <a class="button" href="/">Another entry</a></p>`
    : html`<form class="report-page-form" method="post" action="/nonsense/${uuid}/report">
${reasonFields('page')}
<p class="hint">Reports are anonymous: only the entry, the reason and your details are stored.</p>
<div class="form-actions"><a class="button" href="/nonsense/${uuid}">Cancel</a><button class="button button-primary" type="submit">Send report</button></div>
</form>`
}`;
    return sendPage(request, reply, page({ title: 'Report an entry', appName, current: null, main }), 'no-store');
  });

  app.post(
    '/nonsense/:id/report',
    { schema: { hide: true, body: ReportForm }, bodyLimit: REPORT_BODY_LIMIT },
    async (request, reply) => {
      const uuid = uuidOf((request.params as { id: string }).id);
      const form = request.body as { reason: ReportReason; details?: string };
      const details = checkDetails(form.details ?? '');
      if (!details.ok) throw badRequest(`The field "details" is not acceptable: ${details.reason}.`, { field: 'details' });
      // As in the API, only a well-formed report spends the report budget.
      await app.reportLimit?.(request, reply);
      const report = await app.storage.reports.create(uuid, form.reason, details.text);
      if (report === null) throw notFound(`No entry has the UUID ${uuid}.`);
      return reply.code(303).header('location', `/nonsense/${uuid}/report?sent=1`).header('cache-control', 'no-store').send();
    },
  );
};

export default reportPageRoutes;
