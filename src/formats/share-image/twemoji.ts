/**
 * Unicode emoji in colour: each emoji grapheme is drawn from its Twemoji SVG (`@twemoji/svg`,
 * graphics CC-BY 4.0 by Twitter and contributors).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const directory = path.dirname(require.resolve('@twemoji/svg/package.json'));

// Bounded by the set of files in the package (~3,700, a few KB each), so it needs no eviction.
const cache = new Map<string, string>();

/**
 * twemojiFileName is the name Twemoji gives an emoji: its code points in hex joined by `-`, with
 * U+FE0F (the emoji presentation selector) dropped unless the sequence has a zero-width joiner.
 */
export function twemojiFileName(emoji: string): string {
  const codePoints = [...emoji].map((c) => c.codePointAt(0)!);
  const kept = codePoints.includes(0x200d) ? codePoints : codePoints.filter((c) => c !== 0xfe0f);
  return kept.map((c) => c.toString(16)).join('-');
}

/**
 * twemojiDataUri returns the emoji's SVG as a data URI, or '' when Twemoji has no drawing for it
 * (the text font's glyph is used then). Results are kept: satori asks again on every render.
 */
export function twemojiDataUri(emoji: string): string {
  let uri = cache.get(emoji);
  if (uri === undefined) {
    uri = load(twemojiFileName(emoji));
    // Sequences written without U+FE0F where Twemoji's file name has it (or the reverse).
    if (uri === '' && emoji.includes('\u200d')) uri = load(twemojiFileName(emoji.replaceAll('\ufe0f', '')));
    cache.set(emoji, uri);
  }
  return uri;
}

function load(name: string): string {
  if (!/^[0-9a-f]+(-[0-9a-f]+)*$/.test(name)) return '';
  try {
    return `data:image/svg+xml;base64,${fs.readFileSync(path.join(directory, `${name}.svg`)).toString('base64')}`;
  } catch {
    return '';
  }
}
