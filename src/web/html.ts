/**
 * Building HTML safely. Every page of the site is assembled with the `html` tag: interpolated values
 * are escaped unless they are already `SafeHtml`, so an entry's text (untrusted input) can only ever
 * end up as text, in element content and in quoted attribute values alike.
 */

/** SafeHtml is markup that has been built by `html` (or deliberately marked with `trusted`). */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** escapeHtml makes text safe in element content and in quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** trusted marks a string the code itself wrote (never data) as markup. */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

type Interpolation = SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  // `cond && html\`...\`` reads naturally in templates; false and null render nothing.
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** html is a template tag: the literal parts are markup, every interpolated value is escaped. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new SafeHtml(out);
}
