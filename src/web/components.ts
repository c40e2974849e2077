/** Pieces of markup that several pages share: an entry with its actions, the report dialog and form. */
import { REPORT_REASONS, type ReportReason } from '../domain/reports.ts';
import { html, type SafeHtml } from './html.ts';
import { formatDate, isoDate } from './entry-text.ts';

/** What each report reason means to a reader (the interface's wording). */
export const REASON_LABELS: Readonly<Record<ReportReason, string>> = {
  hate_speech: 'Slurs or hate speech',
  sexual_content: 'Explicit sexual content',
  graphic_violence: 'Graphic violence',
  personal_information: 'Private or personally identifiable information',
  duplicate: 'Same or near-identical entry already exists',
  other: 'Other violation (please add details)',
};

export interface EntryView {
  uuid: string;
  timestamp: number;
  /** The rendered text (entryHtml). */
  text: SafeHtml;
  /** The absolute URL of the entry's share page. */
  shareUrl: string;
}

/**
 * entryArticle shows an entry with its actions. Without JavaScript the links work as they are (share
 * page, PNG download, report form); the copy buttons need the clipboard, so they stay hidden until
 * the script shows them.
 */
export function entryArticle(entry: EntryView, options: { big?: boolean; label?: string } = {}): SafeHtml {
  const { uuid } = entry;
  return html`<article class="entry${options.big ? ' entry-big' : ''}" data-uuid="${uuid}" data-share-url="${entry.shareUrl}"${
    options.label ? html` aria-label="${options.label}"` : ''
  }>
<blockquote class="entry-text" dir="auto">${entry.text}</blockquote>
<p class="entry-meta">Added <time datetime="${isoDate(entry.timestamp)}">${formatDate(entry.timestamp)}</time></p>
<ul class="actions" aria-label="Share or report">
<li><a class="button" href="/nonsense/${uuid}" data-role="share-page">Share page</a></li>
<li><button class="button" type="button" data-action="copy-link" hidden>Copy link</button></li>
<li><button class="button" type="button" data-action="copy-text" hidden>Copy text</button></li>
<li><a class="button" href="/api/v1/nonsense/${uuid}.png" download="nonsense-${uuid}.png" data-role="png">Download PNG</a></li>
<li><a class="button button-quiet" href="/nonsense/${uuid}/report" data-action="report">Report</a></li>
</ul>
</article>`;
}

/** reasonFields are the six reasons as radio buttons and the optional details, for dialog and form. */
export function reasonFields(idPrefix: string): SafeHtml {
  return html`<fieldset class="reasons">
<legend>What is wrong with this entry?</legend>
${REPORT_REASONS.map(
  (reason, index) => html`<div class="choice"><input type="radio" id="${idPrefix}-${reason}" name="reason" value="${reason}"${index === 0 ? html` required` : ''}>
<label for="${idPrefix}-${reason}">${REASON_LABELS[reason]}</label></div>
`,
)}</fieldset>
<div class="field">
<label for="${idPrefix}-details">Details <span class="hint">(optional, up to 1,000 characters)</span></label>
<textarea id="${idPrefix}-details" name="details" maxlength="1000" rows="3"></textarea>
</div>`;
}

/** reportDialog is the dialog the page script opens for the entry whose Report link was used. */
export function reportDialog(): SafeHtml {
  return html`<dialog id="report-dialog" class="dialog" aria-labelledby="report-title">
<form id="report-form" method="post" action="">
<h2 id="report-title">Report this entry</h2>
<blockquote class="report-preview" id="report-preview" dir="auto"></blockquote>
${reasonFields('dialog')}
<p class="message" id="report-message" role="status" aria-live="polite"></p>
<div class="dialog-actions">
<button class="button" type="button" data-action="close-dialog">Cancel</button>
<button class="button button-primary" type="submit">Send report</button>
</div>
</form>
</dialog>`;
}
