/**
 * What readers see of an entry outside a client (share cards, share pages, the site's lists): the raw
 * text with server variables substituted reproducibly (seeded by the UUID) and the client-side
 * variables replaced by neutral words, since a web page has no author, server or channel to name.
 */
import { seededPick, substitute, type ServerVariables } from './variables.ts';

/**
 * The words that stand in for the client-side variables on cards and share pages. They are the
 * defaults of the service; `${app_name}` becomes the configured APP_NAME.
 */
export const CLIENT_VARIABLE_WORDS: Readonly<Record<'$AUTHOR$' | '$SERVER$' | '$CHANNEL$', string>> = Object.freeze({
  $AUTHOR$: 'someone',
  $SERVER$: 'this server',
  $CHANNEL$: 'this channel',
});

/**
 * displayText substitutes every variable of `raw` in one pass (a value is never expanded again): server
 * variables with picks seeded by `uuid`, so one version of an entry always reads the same, and the
 * client-side variables with CLIENT_VARIABLE_WORDS and `appName`. A neutral word that starts a
 * sentence starts with a capital ("Someone"). Line breaks become `\n`.
 */
export function displayText(raw: string, variables: ServerVariables, uuid: string, appName: string): string {
  // Most texts have no variable at all; every cached card's request asks, so that case is kept cheap.
  if (!raw.includes('$')) return raw.replace(/\r\n?/g, '\n');
  // The words go in as placeholders (private-use characters found in neither the text nor any value),
  // so that after the one pass each can be told apart from the same word typed in the text or coming
  // out of a server value, and capitalised by where it landed.
  const taken = [raw, ...[...variables.values()].flat()];
  const placeholders = new Map<string, string>();
  let next = 0xf0000;
  const all = new Map<string, readonly string[]>(variables);
  for (const [name, word] of Object.entries(CLIENT_VARIABLE_WORDS)) {
    while (taken.some((text) => text.includes(String.fromCodePoint(next)))) next++;
    const placeholder = String.fromCodePoint(next++);
    placeholders.set(placeholder, word);
    all.set(name, [placeholder]);
  }
  all.set('${app_name}', [appName]);
  const text = substitute(raw, all, seededPick(uuid)).text.replace(/\r\n?/g, '\n');
  let out = '';
  for (const c of text) {
    const word = placeholders.get(c);
    out += word === undefined ? c : startsSentence(out) ? capitalise(word) : word;
  }
  return out;
}

// A sentence starts at the beginning of the text, after a line break, or after an end mark and a
// space (none needed after CJK marks); opening quotes and brackets may come between.
const OPENING = `[\\s"'“‘«¿¡(\\[]*`;
const ONLY_OPENING = new RegExp(`^${OPENING}$`, 'u');
const AFTER_END = new RegExp(`(?:\\n|[.!?…]\\s+|[。！？])${OPENING}$`, 'u');

function startsSentence(before: string): boolean {
  // Only the end of the text so far matters, so the check looks at a short tail of it.
  return ONLY_OPENING.test(before) || AFTER_END.test(before.slice(-64));
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/** badgeLetter is what the site's and the cards' badge shows: the first grapheme of the service name, upper-case. */
export function badgeLetter(appName: string): string {
  const [first] = new Intl.Segmenter('en', { granularity: 'grapheme' }).segment(appName.trim());
  return first?.segment.toUpperCase() ?? '';
}
