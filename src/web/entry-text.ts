/**
 * An entry's text as the site shows it: escaped, line breaks kept (by CSS), custom emojis as inline
 * images of the service's own emoji files, and optionally the search term marked.
 */
import { CLIENT_VARIABLE_WORDS } from '../domain/display-text.ts';
import { IMAGE_EXTENSIONS, scanCustomEmojis, type ImageType } from '../domain/emojis.ts';
import type { ServerVariables } from '../domain/variables.ts';
import type { Storage } from '../storage/index.ts';
import { escapeHtml, trusted, type SafeHtml } from './html.ts';

/** Image file names (`toast.png`) of the custom emojis, by name. */
export type EmojiFiles = ReadonlyMap<string, string>;

/** emojiFiles lists the custom emojis that exist now, with the file name each image is served as. */
export async function emojiFiles(storage: Storage): Promise<EmojiFiles> {
  return new Map((await storage.emojis.list()).map((e) => [e.name, `${e.name}.${IMAGE_EXTENSIONS[e.contentType as ImageType] ?? 'png'}`]));
}

/**
 * clientWords maps the four client-side variables to what the site shows for them. The site is a
 * client with no author, server or channel to name, so it uses the same neutral words as the share
 * card and page.
 */
export function clientWords(appName: string): Record<string, string> {
  return { ...CLIENT_VARIABLE_WORDS, '${app_name}': appName };
}

/**
 * siteVariables adds the client-side words to the server variables, so one substitution pass
 * (deliverEntry) resolves every variable and a server value is never expanded again.
 */
export function siteVariables(variables: ServerVariables, appName: string): ServerVariables {
  const all = new Map<string, readonly string[]>(variables);
  for (const [name, word] of Object.entries(clientWords(appName))) all.set(name, [word]);
  return all;
}

// Entry texts and variable values never contain control characters other than line breaks (they are
// rejected on the way in), but the text is cleaned anyway so the marker cannot collide with anything.
const MARK = '\u0000';

/**
 * entryHtml renders `text` for an element with `white-space: pre-wrap`. Known `:name:` codes become
 * images; unknown ones stay text. When `highlight` is given, its case-insensitive occurrences are
 * wrapped in <mark> (the search matches the raw text, so after substitution this is best effort).
 */
export function entryHtml(text: string, emojis: EmojiFiles, highlight?: string): SafeHtml {
  const names: string[] = [];
  const marked = scanCustomEmojis(text.replaceAll(MARK, '\uFFFD'), (name) => emojis.has(name), (name) => {
    names.push(name);
    return MARK;
  });
  const pattern = highlight ? new RegExp(highlight.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'giu') : null;
  const parts = marked.split(MARK);
  let out = '';
  parts.forEach((part, index) => {
    out += pattern ? markMatches(part, pattern) : escapeHtml(part);
    const name = names[index];
    if (name !== undefined) {
      out += `<img class="emoji" src="/api/v1/emojis/${escapeHtml(emojis.get(name)!)}" alt=":${name}:" title=":${name}:" width="128" height="128">`;
    }
  });
  return trusted(out);
}

function markMatches(text: string, pattern: RegExp): string {
  let out = '';
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match[0] === '') continue;
    out += `${escapeHtml(text.slice(last, match.index))}<mark>${escapeHtml(match[0])}</mark>`;
    last = match.index + match[0].length;
  }
  return out + escapeHtml(text.slice(last));
}

const DATE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'long', timeZone: 'UTC' });

/** formatDate shows Unix seconds as a date (UTC, the zone of the search's date range). */
export function formatDate(timestamp: number): string {
  return DATE.format(new Date(timestamp * 1000));
}

/** isoDate is the `datetime` attribute of a <time>. */
export function isoDate(timestamp: number): string {
  return new Date(timestamp * 1000).toISOString();
}
