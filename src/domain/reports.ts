import { parseUuid } from './uuid.ts';

/** What readers may report an entry for; the API, the site and the admin page share it. */
export const REPORT_REASONS = ['hate_speech', 'sexual_content', 'graphic_violence', 'personal_information', 'duplicate', 'other'] as const;
export type ReportReason = (typeof REPORT_REASONS)[number];

/** The largest report body taken, JSON or form: 16 KiB. */
export const REPORT_BODY_LIMIT = 16 * 1024;

/** A position in the report queue's order (filed, then id): the last report of a page. */
export interface ReportCursor {
  /** When the report was filed, Unix milliseconds (reports filed within one second keep their order). */
  createdAtMs: number;
  id: string;
}

/** encodeReportCursor writes a report position as it travels in a `Link` header: `<ms>.<id>`. */
export function encodeReportCursor(cursor: ReportCursor): string {
  return `${cursor.createdAtMs}.${cursor.id}`;
}

/** parseReportCursor reads what encodeReportCursor wrote; null for anything else. */
export function parseReportCursor(text: string): ReportCursor | null {
  const match = /^(\d{1,15})\.(.{36})$/.exec(text);
  const id = match ? parseUuid(match[2]!) : null;
  return match && id ? { createdAtMs: Number(match[1]), id } : null;
}
