/**
 * What one card may cost, decided before any layout or decoding: how much text it draws, and how
 * many emoji pixels it decodes. Server variables can expand an entry of 2,000 characters to tens of
 * thousands, and an emoji stored by other means than the upload route may declare billions of pixels
 * in a few hundred kilobytes; the layout and the rasteriser run in native and WebAssembly memory that
 * the render worker's heap limit does not cover, so these bounds are what keeps a card's memory and
 * time in proportion to what it shows.
 */
import { imageSize } from 'image-size';
import { MAX_TEXT_LENGTH } from '../../domain/text.ts';

/**
 * The characters (code points) a card draws at most; a longer text is cut and ends in "…". The
 * longest entry without variables is this long, and the fitting sets it whole when it is prose in
 * letters about as wide as Latin ones; square CJK characters fit fewer (docs/share-image.md).
 */
export const CARD_MAX_CHARACTERS = MAX_TEXT_LENGTH;

/**
 * The most pixels an emoji image may declare (width × height) to be decoded at all: 2048 × 2048,
 * four times what the upload route allows. One larger is drawn as its `:name:` text.
 */
export const EMOJI_MAX_PIXELS = 2048 * 2048;

/**
 * The most emoji pixels a card decodes, summed over every place an emoji is drawn (the rasteriser
 * decodes an image for each place): 4096 × 4096, 64 MiB as RGBA. Above it, every emoji of the card
 * is drawn from a copy scaled to EMOJI_SCALED_SIDE.
 */
export const CARD_EMOJI_PIXELS = 4096 * 4096;

/**
 * The longest side of the scaled copies: above the largest text size (96 px), so they stay sharp.
 * A card of 2,000 characters holds at most 500 emojis (`:ab:`), 8.2 million pixels at this size.
 */
export const EMOJI_SCALED_SIDE = 128;

const ELLIPSIS = '…';

/**
 * cutCardText returns `text` when it has at most `max` code points, else its longest start of at most
 * `max` code points that ends on a grapheme boundary and outside any emoji token, followed by "…". A
 * token is a `:name:` that `glyphs` has already turned into one private-use character: `replaced` is
 * the text with those characters, `tokens` what each stands for. The cut never splits a surrogate
 * pair, a grapheme (an emoji sequence, a letter and its marks) or a token.
 */
export function cutCardText(text: string, max: number = CARD_MAX_CHARACTERS, glyphs?: { replaced: string; tokens: ReadonlyMap<string, string> }): string {
  // A text of at most `max` UTF-16 units has at most `max` code points.
  if (text.length <= max) return text;
  const replaced = glyphs?.replaced ?? text;
  const tokens = glyphs?.tokens ?? new Map<string, string>();
  // Only the start is segmented: 2 × max + 2 units hold more than `max` code points, so every
  // grapheme that reaches the end of the window is past the limit and not taken.
  const window = replaced.slice(0, 2 * max + 2);
  let count = 0;
  let cutAt = 0; // in `text`'s UTF-16 units
  for (const { segment } of new Intl.Segmenter('en', { granularity: 'grapheme' }).segment(window)) {
    let points = 0;
    let units = 0;
    for (const char of segment) {
      const token = tokens.get(char);
      points += token === undefined ? 1 : [...token].length;
      units += token === undefined ? char.length : token.length;
    }
    if (count + points > max) break;
    count += points;
    cutAt += units;
  }
  if (cutAt >= text.length) return text;
  return text.slice(0, cutAt).trimEnd() + ELLIPSIS;
}

/**
 * declaredPixels reads an image's width × height from its header, without decoding it; null when the
 * header cannot be read.
 */
export function declaredPixels(image: Uint8Array): number | null {
  try {
    const { width, height } = imageSize(image);
    return width !== undefined && height !== undefined && width > 0 && height > 0 ? width * height : null;
  } catch {
    return null;
  }
}
