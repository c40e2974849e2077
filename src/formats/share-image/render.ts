/**
 * renderShareImage draws an entry's card: 1200×630 PNG (the Open Graph size). It is a pure function
 * of its input: the same text, emoji images and service name always give the same bytes.
 *
 * Satori lays the card out and writes SVG (text as glyph outlines from the bundled fonts); resvg
 * rasterises it on libuv's thread pool, so the event loop is busy only for the layout, the SVG and
 * the PNG encoding.
 */
import { renderAsync } from '@resvg/resvg-js';
import satori from 'satori';
import { CARD_HEIGHT, CARD_WIDTH, cardNode, TEXT_BOX, TEXT_KEY, textNode, type ElementNode, type TextStyle } from './card.ts';
import { cardFonts } from './fonts.ts';
import { scanCustomEmojis } from './text.ts';
import { twemojiDataUri } from './twemoji.ts';

/**
 * The version of the card's design. It is part of every cache key and ETag, so raise it whenever the
 * design or the renderer changes the pixels, and cached cards are replaced.
 */
export const CARD_DESIGN_VERSION = 1;

export interface CustomEmojiImage {
  /** image/png, image/gif or image/webp. */
  contentType: string;
  image: Uint8Array;
}

export interface ShareCardInput {
  /** The text to show, variables already substituted (see cardText). */
  text: string;
  /** Custom emojis by name; `:name:` in the text is drawn from these images. */
  emojis: ReadonlyMap<string, CustomEmojiImage>;
  /** The service name, shown in the footer. */
  appName: string;
}

/** Font sizes tried, largest first: from a few words down to 2,000 characters (the longest entry). */
const SIZES = [96, 88, 80, 72, 64, 58, 52, 47, 43, 39, 36, 33, 30, 28, 26, 24, 22, 21, 20, 19, 18] as const;

const MEASURE_HEIGHT = 4 * CARD_HEIGHT;

/**
 * textStyle is the style of the text at one size: semi-bold from 36 px, where it reads as a headline,
 * regular below; looser lines as the size shrinks, for long texts.
 */
export function textStyle(fontSize: number): TextStyle {
  return {
    fontSize,
    fontWeight: fontSize >= 36 ? 600 : 400,
    lineHeight: fontSize >= 52 ? 1.2 : fontSize >= 30 ? 1.3 : 1.4,
  };
}

/** renderShareImage renders the card as PNG bytes. */
export async function renderShareImage(input: ShareCardInput): Promise<Buffer> {
  const svg = await renderShareSvg(input);
  const image = await renderAsync(svg, { fitTo: { mode: 'original' }, font: { loadSystemFonts: false }, logLevel: 'off' });
  return image.asPng();
}

/** renderShareSvg lays the card out as SVG, text as outlines and emojis as embedded images. */
export async function renderShareSvg(input: ShareCardInput): Promise<string> {
  const { text, graphemeImages } = withEmojiGlyphs(input.text, input.emojis);
  const style = await fitText(text, graphemeImages);
  return satori(cardNode(textNode(text, style), input.appName) as never, {
    width: CARD_WIDTH,
    height: CARD_HEIGHT,
    fonts: cardFonts(),
    graphemeImages,
    loadAdditionalAsset,
  });
}

/** Image types resvg can draw. It cannot decode WebP, so a WebP emoji stays `:name:` on the card. */
const DRAWABLE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/gif', 'image/jpeg']);

/**
 * withEmojiGlyphs turns each known `:name:` into one private-use character that satori draws from
 * the emoji's image at text height (satori maps images to single graphemes only). Characters the text
 * already contains are skipped, so a private-use character typed into an entry stays what it was.
 */
export function withEmojiGlyphs(text: string, emojis: ReadonlyMap<string, CustomEmojiImage>): { text: string; graphemeImages: Record<string, string> } {
  const graphemeImages: Record<string, string> = {};
  if (emojis.size === 0) return { text, graphemeImages };
  const glyphs = new Map<string, string>();
  let next = 0xe000;
  const replaced = scanCustomEmojis(
    text,
    (name) => DRAWABLE_TYPES.has(emojis.get(name)?.contentType ?? ''),
    (name) => {
      let glyph = glyphs.get(name);
      if (glyph === undefined) {
        while (text.includes(String.fromCodePoint(next))) next++;
        glyph = String.fromCodePoint(next++);
        const { contentType, image } = emojis.get(name)!;
        graphemeImages[glyph] = `data:${contentType};base64,${Buffer.from(image.buffer, image.byteOffset, image.byteLength).toString('base64')}`;
        glyphs.set(name, glyph);
      }
      return glyph;
    },
  );
  return { text: replaced, graphemeImages };
}

/**
 * fitText picks the largest size at which the text fits the text box. Satori lays the text out to
 * check (a pass without glyph outlines costs 3–15 ms); an estimate from the length of each line picks
 * the first size to try, so it usually takes two passes. When even the smallest size overflows
 * (hundreds of short lines), the text is clamped to the lines that fit, with an ellipsis.
 */
export async function fitText(text: string, graphemeImages: Record<string, string>): Promise<TextStyle> {
  const fitsAt = (index: number) => fits(text, textStyle(SIZES[index]!), graphemeImages);
  let index = estimateSizeIndex(text);
  if (await fitsAt(index)) {
    while (index > 0 && (await fitsAt(index - 1))) index--;
    return textStyle(SIZES[index]!);
  }
  while (index < SIZES.length - 1) {
    index++;
    if (await fitsAt(index)) return textStyle(SIZES[index]!);
  }
  const smallest = textStyle(SIZES[SIZES.length - 1]!);
  return { ...smallest, maxLines: Math.floor(TEXT_BOX.height / (smallest.fontSize * smallest.lineHeight)) };
}

// Average advance of Noto Sans in running text, in em; only a starting point for fitText.
const AVERAGE_ADVANCE = { 400: 0.52, 600: 0.55 } as const;

/** estimateSizeIndex guesses the index in SIZES of the largest size that fits. */
function estimateSizeIndex(text: string): number {
  const lengths = text.split('\n').map((line) => [...line].length);
  const index = SIZES.findIndex((size) => {
    const style = textStyle(size);
    const perLine = TEXT_BOX.width / (size * AVERAGE_ADVANCE[style.fontWeight]);
    const lines = lengths.reduce((sum, length) => sum + Math.max(1, Math.ceil(length / perLine)), 0);
    return lines * size * style.lineHeight <= TEXT_BOX.height;
  });
  return index === -1 ? SIZES.length - 1 : index;
}

async function fits(text: string, style: TextStyle, graphemeImages: Record<string, string>): Promise<boolean> {
  let height = Number.POSITIVE_INFINITY;
  await satori(measureRoot(textNode(text, style)) as never, {
    width: TEXT_BOX.width,
    height: MEASURE_HEIGHT,
    fonts: cardFonts(),
    graphemeImages,
    loadAdditionalAsset,
    // Text as <text> elements instead of outlines: the layout is the same, the pass much cheaper.
    embedFont: false,
    onNodeDetected: (node) => {
      if (node.key === TEXT_KEY) height = node.height;
    },
  });
  return height <= TEXT_BOX.height;
}

function measureRoot(text: ElementNode): ElementNode {
  // A column that does not stretch its child, tall enough that the text's own height is what shows.
  return {
    type: 'div',
    props: { style: { display: 'flex', flexDirection: 'column', alignItems: 'flex-start', width: TEXT_BOX.width, height: MEASURE_HEIGHT }, children: text },
  };
}

/**
 * Satori asks for what its fonts lack: emoji (answered from Twemoji) and scripts such as Arabic or
 * CJK, for which no font is bundled; their glyphs fall back to the font's blank box.
 */
async function loadAdditionalAsset(languageCode: string, segment: string): Promise<string | []> {
  return languageCode === 'emoji' ? twemojiDataUri(segment) : [];
}
