/**
 * Custom emojis: their names, the image types accepted for them (recognised by their content, never
 * by a declared type), and the `:name:` codes that texts use them by.
 */

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

/** sniffImageType returns the type announced by the file's magic bytes, or null. */
export function sniffImageType(bytes: Uint8Array): ImageType | null {
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
  if (bytes.length >= 8 && bytes[0] === 0x89 && ascii(1, 8) === 'PNG\r\n\x1a\n') return 'image/png';
  if (bytes.length >= 6 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return 'image/gif';
  if (bytes.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return null;
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
