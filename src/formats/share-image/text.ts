/**
 * What a card says: the entry's raw text with server variables substituted reproducibly (seeded by
 * the UUID) and the client-side variables replaced by neutral words, since a card has no author,
 * server or channel to name.
 */
import { seededPick, substitute, type ServerVariables } from '../../domain/variables.ts';

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
 * cardText substitutes every variable of `raw` in one pass (a value is never expanded again): server
 * variables with picks seeded by `uuid`, so one version of an entry always reads the same, and the
 * client-side variables with CLIENT_VARIABLE_WORDS and `appName`. A neutral word that starts a
 * sentence starts with a capital ("Someone"). Line breaks become `\n`.
 */
export function cardText(raw: string, variables: ServerVariables, uuid: string, appName: string): string {
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

const EMOJI_AT = /:([a-z0-9_]{2,32}):/y;

/**
 * scanCustomEmojis calls `found` for each `:name:` of `text` whose name `isKnown` accepts and returns
 * the text with each replaced by `found`'s result. Like variable substitution, it tries the grammar at
 * every colon, so an unknown `:word:` does not hide a known emoji sharing its closing colon.
 */
export function scanCustomEmojis(text: string, isKnown: (name: string) => boolean, found: (name: string) => string = (name) => `:${name}:`): string {
  let out = '';
  let copiedUpTo = 0;
  let at = text.indexOf(':');
  while (at !== -1) {
    EMOJI_AT.lastIndex = at;
    const match = EMOJI_AT.exec(text);
    if (match && isKnown(match[1]!)) {
      out += text.slice(copiedUpTo, at) + found(match[1]!);
      copiedUpTo = at + match[0].length;
      at = text.indexOf(':', copiedUpTo);
    } else {
      at = text.indexOf(':', at + 1);
    }
  }
  return out + text.slice(copiedUpTo);
}

/** customEmojiNames lists, once each and in order of appearance, the known emojis `text` uses. */
export function customEmojiNames(text: string, isKnown: (name: string) => boolean): string[] {
  const names = new Set<string>();
  scanCustomEmojis(text, isKnown, (name) => {
    names.add(name);
    return '';
  });
  return [...names];
}
