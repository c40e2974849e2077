/**
 * Custom emojis: their names, the images accepted for them (type recognised by their content, never
 * by a declared type; size and dimensions bounded), and the `:name:` codes that texts use them by.
 */
import { imageSize } from 'image-size';

/** An emoji's name: 2 to 32 of a-z, 0-9 and _ (a regular expression source, without anchors). */
export const EMOJI_NAME_SOURCE = '[a-z0-9_]{2,32}';
/** The name alone, anchored: for schemas and validation. */
export const EMOJI_NAME_PATTERN = `^${EMOJI_NAME_SOURCE}$`;
export const EMOJI_NAME = new RegExp(EMOJI_NAME_PATTERN);

export type ImageType = 'image/png' | 'image/gif' | 'image/webp';

export const IMAGE_EXTENSIONS: Readonly<Record<ImageType, string>> = {
  'image/png': 'png',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

/** The largest emoji image, in bytes (also the upload route's body limit). */
export const MAX_EMOJI_BYTES = 256 * 1024;
/**
 * The longest side of an emoji image, in pixels. It also bounds what decoding one costs: at most
 * 1,048,576 pixels, whatever the file's size (a few hundred bytes of PNG can declare 60,000×60,000).
 */
export const MAX_EMOJI_SIDE = 1024;

/** sniffImageType returns the type announced by the file's magic bytes, or null. */
export function sniffImageType(bytes: Uint8Array): ImageType | null {
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
  if (bytes.length >= 8 && bytes[0] === 0x89 && ascii(1, 8) === 'PNG\r\n\x1a\n') return 'image/png';
  if (bytes.length >= 6 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return 'image/gif';
  if (bytes.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return null;
}

export type EmojiImageCheck = { ok: true; type: ImageType; width: number; height: number } | { ok: false; reason: string };

/**
 * checkEmojiImage tells whether `bytes` may be an emoji image: a PNG, GIF or WebP by its magic bytes,
 * at most MAX_EMOJI_BYTES, and 1 to MAX_EMOJI_SIDE pixels on each side as its header declares them,
 * read before anything decodes the pixels. The reason reads after "the image is" ("the body is").
 * The admin upload and `nonsense restore` both check with it; each compares the type found with the
 * type it was given itself.
 */
export function checkEmojiImage(bytes: Uint8Array): EmojiImageCheck {
  if (bytes.length > MAX_EMOJI_BYTES) return { ok: false, reason: `${bytes.length} bytes long; at most ${MAX_EMOJI_BYTES} bytes (${MAX_EMOJI_BYTES / 1024} KiB) are allowed` };
  const type = sniffImageType(bytes);
  if (type === null) return { ok: false, reason: 'not a PNG, GIF or WebP image' };
  let size: { width?: number; height?: number };
  try {
    size = imageSize(bytes);
  } catch {
    return { ok: false, reason: `a ${type} image that cannot be decoded` };
  }
  const { width = 0, height = 0 } = size;
  if (!(width >= 1 && height >= 1 && width <= MAX_EMOJI_SIDE && height <= MAX_EMOJI_SIDE)) {
    return { ok: false, reason: `a ${type} image of ${width}×${height} pixels; emojis must be 1 to ${MAX_EMOJI_SIDE} pixels on each side` };
  }
  return { ok: true, type, width, height };
}

const EMOJI_AT = new RegExp(`:(${EMOJI_NAME_SOURCE}):`, 'y');

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
