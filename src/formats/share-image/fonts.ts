/**
 * The card's typeface: Noto Sans from `@expo-google-fonts/noto-sans`, so every installation renders
 * with the same glyphs (system fonts differ between machines, and with them the bytes of a card).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Font } from 'satori';

export const FONT_FAMILY = 'Noto Sans';

const require = createRequire(import.meta.url);

const FILES = [
  { weight: 400, file: '400Regular/NotoSans_400Regular.ttf' },
  { weight: 600, file: '600SemiBold/NotoSans_600SemiBold.ttf' },
] as const;

let fonts: Font[] | null = null;

/**
 * cardFonts returns the fonts, read once. The same array is handed to satori on every render: it
 * keeps parsed fonts per array, so a new array would mean parsing ~1 MB of fonts again.
 */
export function cardFonts(): Font[] {
  fonts ??= FILES.map(({ weight, file }) => ({
    name: FONT_FAMILY,
    data: fs.readFileSync(require.resolve(`@expo-google-fonts/noto-sans/${file}`)),
    weight,
    style: 'normal' as const,
  }));
  return fonts;
}
