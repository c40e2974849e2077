/**
 * renderShareImage draws an entry's card: 1200×630 PNG (the Open Graph size). It is a pure function
 * of its input: the same text, emoji images and service name always give the same bytes.
 *
 * A card is its plate (background and footer, the same for every card of a service, drawn once per
 * process) and its text area. Satori lays the text area out and writes SVG (text as glyph outlines
 * from the bundled fonts), resvg rasterises it, it is laid over a copy of the plate, and sharp
 * encodes the PNG. It is CPU-bound from start to end: the service runs it in render workers
 * (src/services/cards/), never on the event loop.
 */
import { Resvg, type ResvgRenderOptions } from '@resvg/resvg-js';
import satori from 'satori';
import sharp from 'sharp';
import { CARD_HEIGHT, CARD_WIDTH, plateNode, TEXT_AREA, TEXT_BOX, TEXT_KEY, textAreaNode, textNode, type ElementNode, type TextFlow, type TextStyle } from './card.ts';
import { cardFonts } from './fonts.ts';
import { textScripts, type ScriptFace } from './scripts.ts';
import { scanCustomEmojis } from '../../domain/emojis.ts';
import { twemojiDataUri } from './twemoji.ts';
import { CARD_EMOJI_PIXELS, CARD_MAX_CHARACTERS, cutCardText, declaredPixels, EMOJI_MAX_PIXELS, EMOJI_SCALED_SIDE } from './limits.ts';

export { CARD_DESIGN_VERSION } from './card.ts';

export interface CustomEmojiImage {
  /** image/png, image/gif or image/webp. */
  contentType: string;
  image: Uint8Array;
}

export interface ShareCardInput {
  /** The text to show, variables already substituted (see displayText); a card draws at most CARD_MAX_CHARACTERS of it. */
  text: string;
  /** Custom emojis by name; `:name:` in the text is drawn from these images. */
  emojis: ReadonlyMap<string, CustomEmojiImage>;
  /** The service name, shown in the footer. */
  appName: string;
}

export interface RenderOptions {
  /** Asked between the steps of a render; when it answers true the render stops with RenderCancelled. */
  cancelled?: () => boolean;
}

/** The error a render stops with when RenderOptions.cancelled says so. */
export class RenderCancelled extends Error {
  constructor() {
    super('The render was cancelled.');
    this.name = 'RenderCancelled';
  }
}

/**
 * Font sizes tried, largest first: from a few words down to 2,000 characters of prose (the longest
 * entry). At 18 px the box holds 18 lines, which 2,000 characters fill only when every line comes out
 * full; paragraphs and long words leave lines short, so the smallest sizes go below it. 16 px is the
 * floor of body text on screens: square characters (Han, kana, Hangul) that do not fit there are
 * clamped rather than set smaller (docs/share-image.md).
 */
const SIZES = [96, 88, 80, 72, 64, 58, 52, 47, 43, 39, 36, 33, 30, 28, 26, 24, 22, 21, 20, 19, 18, 17, 16] as const;

const MEASURE_HEIGHT = 4 * CARD_HEIGHT;

// libvips' operation cache keeps up to 50 MB of recent operations with their pixels for reuse; no two
// cards share an operation (each starts from new pixels), so it would only hold memory.
sharp.cache(false);

/** PNG: zlib level 6 without adaptive filters encodes a card in about half the time, at ±5% size. */
const PNG_OPTIONS = { compressionLevel: 6, adaptiveFiltering: false } as const;

const RESVG_OPTIONS: ResvgRenderOptions = { fitTo: { mode: 'original' }, font: { loadSystemFonts: false }, logLevel: 'off' };

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

/** What satori needs for one card, worked out once and shared by the fitting passes and the render. */
interface Prepared {
  text: string;
  graphemeImages: Record<string, string>;
  faces: ScriptFace[];
  flow: TextFlow;
}

async function prepare(input: ShareCardInput): Promise<Prepared> {
  const { text, shown, graphemeImages } = await withEmojiGlyphs(input.text, input.emojis);
  const scripts = textScripts(shown);
  return { text, graphemeImages, faces: scripts.faces, flow: { direction: scripts.direction, lang: scripts.lang } };
}

/** renderShareImage renders the card as PNG bytes. */
export async function renderShareImage(input: ShareCardInput, options: RenderOptions = {}): Promise<Buffer> {
  const check = () => {
    if (options.cancelled?.()) throw new RenderCancelled();
  };
  const plate = await plateOf(input.appName);
  const prepared = await prepare(input);
  check();
  const svg = await svgOf(prepared, await fitText(prepared, check));
  check();
  const front = new Resvg(svg, RESVG_OPTIONS).render();
  check();
  const rgb = overPlate(plate, front.pixels, canvas());
  try {
    return await sharp(rgb, { raw: { width: CARD_WIDTH, height: CARD_HEIGHT, channels: 3 } }).png(PNG_OPTIONS).toBuffer();
  } finally {
    spareCanvas = rgb;
  }
}

/**
 * The card's pixels are composed in a buffer of 2.2 MB that the next render reuses: a new one for
 * each card was a new mapping of memory (the allocator maps blocks this large, see
 * docs/deployment.md) whose first writes page faulted, a large part of a warm render's time. Renders that overlap
 * (tests; a worker draws one card at a time) take a new buffer each.
 */
let spareCanvas: Buffer | null = null;

function canvas(): Buffer {
  const spare = spareCanvas;
  spareCanvas = null;
  return spare ?? Buffer.allocUnsafe(CARD_WIDTH * CARD_HEIGHT * 3);
}

/**
 * renderShareSvg lays the card's text area out as SVG (what is drawn over the plate), emojis as
 * embedded images and text as outlines; with `outlines: false`, text as <text> elements in the same
 * layout, so tests and tools can read what a card draws.
 */
export async function renderShareSvg(input: ShareCardInput, { outlines = true }: { outlines?: boolean } = {}): Promise<string> {
  const prepared = await prepare(input);
  return svgOf(prepared, await fitText(prepared), outlines);
}

function svgOf(prepared: Prepared, style: TextStyle, outlines = true): Promise<string> {
  return satori(textAreaNode(textNode(prepared.text, style, prepared.flow), prepared.flow.direction), {
    width: TEXT_AREA.width,
    height: TEXT_AREA.height,
    fonts: cardFonts(prepared.faces),
    graphemeImages: prepared.graphemeImages,
    loadAdditionalAsset,
    embedFont: outlines,
  });
}

/** Plates by service name. A service has one name; more than a few means tests or tools, which may redraw. */
const plates = new Map<string, Promise<Buffer>>();
const MAX_PLATES = 4;

/**
 * plateOf returns the plate of a service (background and footer) as RGB pixels, drawn once per
 * process: resvg spends about 0.1 s on the background's gradients, and the footer's text is a
 * quarter of a card's SVG.
 */
function plateOf(appName: string): Promise<Buffer> {
  let plate = plates.get(appName);
  if (plate === undefined) {
    if (plates.size >= MAX_PLATES) plates.delete(plates.keys().next().value!);
    plate = (async () => {
      const svg = await satori(plateNode(appName), { width: CARD_WIDTH, height: CARD_HEIGHT, fonts: cardFonts(textScripts(appName).faces) });
      const rgba = new Resvg(svg, RESVG_OPTIONS).render().pixels;
      // The plate is opaque: its alpha is 255 everywhere and is left out.
      const rgb = Buffer.allocUnsafe(CARD_WIDTH * CARD_HEIGHT * 3);
      for (let i = 0, j = 0; i < rgba.length; i += 4, j += 3) {
        rgb[j] = rgba[i]!;
        rgb[j + 1] = rgba[i + 1]!;
        rgb[j + 2] = rgba[i + 2]!;
      }
      return rgb;
    })();
    plate.catch(() => plates.delete(appName));
    plates.set(appName, plate);
  }
  return plate;
}

/**
 * overPlate copies the opaque RGB plate into `out` and lays the text area's premultiplied RGBA pixels
 * (resvg's) over it at TEXT_AREA: out = front + plate × (1 − α). Most of the area is transparent.
 */
function overPlate(plate: Buffer, front: Uint8Array, out: Buffer): Buffer {
  plate.copy(out);
  const { left, top, width, height } = TEXT_AREA;
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0, j = ((top + y) * CARD_WIDTH + left) * 3; x < width; x++, i += 4, j += 3) {
      const alpha = front[i + 3]!;
      if (alpha === 0) continue;
      const keep = 255 - alpha;
      out[j] = front[i]! + Math.round((plate[j]! * keep) / 255);
      out[j + 1] = front[i + 1]! + Math.round((plate[j + 1]! * keep) / 255);
      out[j + 2] = front[i + 2]! + Math.round((plate[j + 2]! * keep) / 255);
    }
  }
  return out;
}

/** Image types resvg draws itself; WebP is converted to PNG first. */
const DRAWABLE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/gif', 'image/jpeg']);
const CONVERTED_TYPES: ReadonlySet<string> = new Set(['image/webp']);

/**
 * withEmojiGlyphs turns each known `:name:` into one private-use character that satori draws from
 * the emoji's image at text height (satori maps images to single graphemes only), and cuts the text
 * to what a card draws (cutCardText). Characters the text already contains are skipped, so a
 * private-use character typed into an entry stays what it was. `text` is what satori lays out,
 * `shown` the same before the emojis were replaced.
 *
 * Nothing is decoded beyond the pixel budgets (limits.ts): an emoji whose image declares more than
 * EMOJI_MAX_PIXELS stays `:name:` text, and when the emojis drawn would decode more than
 * CARD_EMOJI_PIXELS together, each is drawn from a copy scaled to EMOJI_SCALED_SIDE. resvg cannot
 * decode WebP, so a WebP emoji is converted to PNG (its first frame) with sharp.
 */
export async function withEmojiGlyphs(
  text: string,
  emojis: ReadonlyMap<string, CustomEmojiImage>,
): Promise<{ text: string; shown: string; graphemeImages: Record<string, string> }> {
  const graphemeImages: Record<string, string> = {};
  const usable = new Map<string, { emoji: CustomEmojiImage; pixels: number | null }>();
  for (const [name, emoji] of emojis) {
    if (!DRAWABLE_TYPES.has(emoji.contentType) && !CONVERTED_TYPES.has(emoji.contentType)) continue;
    const pixels = declaredPixels(emoji.image);
    if (pixels === null || pixels <= EMOJI_MAX_PIXELS) usable.set(name, { emoji, pixels });
  }
  if (usable.size === 0) {
    const shown = cutCardText(text);
    return { text: shown, shown, graphemeImages };
  }
  const isUsable = (name: string) => usable.has(name);
  const glyphs = new Map<string, string>();
  let next = 0xe000;
  const replacedWhole = scanCustomEmojis(text, isUsable, (name) => {
    let glyph = glyphs.get(name);
    if (glyph === undefined) {
      while (text.includes(String.fromCodePoint(next))) next++;
      glyph = String.fromCodePoint(next++);
      glyphs.set(name, glyph);
    }
    return glyph;
  });
  const shown = cutCardText(text, CARD_MAX_CHARACTERS, { replaced: replacedWhole, tokens: new Map([...glyphs].map(([name, glyph]) => [glyph, `:${name}:`])) });
  // The cut ends outside every token, so the cut text has the same tokens as the start of the whole.
  const uses = new Map<string, number>();
  const replaced = scanCustomEmojis(shown, isUsable, (name) => {
    uses.set(name, (uses.get(name) ?? 0) + 1);
    return glyphs.get(name)!;
  });
  // An image whose header cannot be read counts as one pixel: it is drawn as nothing (toDrawable).
  let decoded = 0;
  for (const [name, count] of uses) decoded += count * (usable.get(name)!.pixels ?? 1);
  const scale = decoded > CARD_EMOJI_PIXELS;
  const images = await Promise.all(
    [...uses.keys()].map(async (name) => {
      const { emoji, pixels } = usable.get(name)!;
      const drawable = await toDrawable(emoji, pixels !== null, scale);
      const uri = `data:${drawable.contentType};base64,${Buffer.from(drawable.image.buffer, drawable.image.byteOffset, drawable.image.byteLength).toString('base64')}`;
      return [glyphs.get(name)!, uri] as const;
    }),
  );
  for (const [glyph, uri] of images) graphemeImages[glyph] = uri;
  return { text: replaced, shown, graphemeImages };
}

/**
 * toDrawable returns an image resvg can draw within the budgets: the stored one, or a PNG made by
 * sharp (from WebP, or scaled down), never decoding more than EMOJI_MAX_PIXELS. An image whose header
 * cannot be read, or that sharp cannot decode, draws as nothing rather than failing the card; uploads
 * are checked, so this is rare.
 */
async function toDrawable(emoji: CustomEmojiImage, readable: boolean, scale: boolean): Promise<CustomEmojiImage> {
  if (!readable) return { contentType: 'image/png', image: EMPTY_PNG };
  if (DRAWABLE_TYPES.has(emoji.contentType) && !scale) return emoji;
  let image = sharp(emoji.image, { limitInputPixels: EMOJI_MAX_PIXELS });
  if (scale) image = image.resize(EMOJI_SCALED_SIDE, EMOJI_SCALED_SIDE, { fit: 'inside', withoutEnlargement: true });
  const png = await image.png().toBuffer().catch(() => EMPTY_PNG);
  return { contentType: 'image/png', image: png };
}

// A 1×1 transparent PNG.
const EMPTY_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

/**
 * fitText picks the largest size at which the text fits the text box. Satori lays the text out to
 * check (a pass without glyph outlines costs 3–15 ms); an estimate from the length of each line picks
 * the first size to try, so it usually takes two passes. When even the smallest size overflows
 * (hundreds of short lines, or more square CJK characters than the box holds at 16 px), the text is
 * clamped to the lines that fit, with an ellipsis.
 */
async function fitText(prepared: Prepared, check: () => void = () => {}): Promise<TextStyle> {
  const fitsAt = async (index: number) => {
    check();
    return fits(prepared, textStyle(SIZES[index]!));
  };
  let index = estimateSizeIndex(prepared.text);
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

/** fitTextSize is fitText for a bare text (tests and tools): the style the card would use. */
export async function fitTextSize(text: string, emojis: ReadonlyMap<string, CustomEmojiImage> = new Map()): Promise<TextStyle> {
  return fitText(await prepare({ text, emojis, appName: '' }));
}

// Average advance of Noto Sans in running text, spaces included, in em; only a starting point for fitText.
const AVERAGE_ADVANCE = { 400: 0.48, 600: 0.52 } as const;
// Han, kana, Hangul and the full-width forms are a full em wide: counted as letters, they made the
// guess for CJK text far too large, and the fitting walked down from it one layout pass a size.
const FULL_WIDTH = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff01-\uff60\uffe0-\uffe6]/u;

/** estimateSizeIndex guesses the index in SIZES of the largest size that fits. */
function estimateSizeIndex(text: string): number {
  const lines = text.split('\n').map((line) => {
    let narrow = 0;
    let wide = 0;
    for (const character of line) {
      if (FULL_WIDTH.test(character)) wide++;
      else narrow++;
    }
    return { narrow, wide };
  });
  const index = SIZES.findIndex((size) => {
    const style = textStyle(size);
    const advance = AVERAGE_ADVANCE[style.fontWeight];
    const count = lines.reduce((sum, { narrow, wide }) => sum + Math.max(1, Math.ceil(((narrow * advance + wide) * size) / TEXT_BOX.width)), 0);
    return count * size * style.lineHeight <= TEXT_BOX.height;
  });
  return index === -1 ? SIZES.length - 1 : index;
}

async function fits(prepared: Prepared, style: TextStyle): Promise<boolean> {
  let height = Number.POSITIVE_INFINITY;
  await satori(measureRoot(textNode(prepared.text, style, prepared.flow)), {
    width: TEXT_BOX.width,
    height: MEASURE_HEIGHT,
    fonts: cardFonts(prepared.faces),
    graphemeImages: prepared.graphemeImages,
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
 * Satori asks for what its fonts lack. Emoji are answered from Twemoji. Fonts are not: the faces a
 * text needs are chosen from its scripts before the render (scripts.ts), so that what a card looks
 * like never depends on what was rendered before it; a character no bundled face has stays a box.
 */
async function loadAdditionalAsset(languageCode: string, segment: string): Promise<string | []> {
  return languageCode === 'emoji' ? twemojiDataUri(segment) : [];
}
