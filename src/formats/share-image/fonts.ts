/**
 * The card's typefaces: Noto Sans from `@expo-google-fonts/noto-sans` (Latin, Greek, Cyrillic and
 * Devanagari), and the Noto Sans faces of other scripts from their `@expo-google-fonts/noto-sans-*`
 * packages, read only when a text needs them. Fonts ship with the service, so every installation
 * renders with the same glyphs and the same bytes (system fonts differ between machines).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Font } from 'satori';
import type { CardLocale, ScriptFace } from './scripts.ts';

export const FONT_FAMILY = 'Noto Sans';

const require = createRequire(import.meta.url);

type Weight = 400 | 600;

interface FaceFile {
  /** The npm package under `@expo-google-fonts/`. */
  pkg: string;
  /** The file name prefix inside it, e.g. NotoSansArabic. */
  prefix: string;
  /** Satori's locale for the face: it prefers a face whose locale is the text's. */
  lang: CardLocale | 'ar-AR' | 'he-IL' | 'th-TH';
  /**
   * The weights drawn. A CJK face is 5–10 MB and costs 30–40 MB of memory once parsed, so CJK is
   * drawn semi-bold at every size; the other faces are small and come in both weights.
   */
  weights: readonly Weight[];
}

const FACES: Readonly<Record<ScriptFace, FaceFile>> = {
  arabic: { pkg: 'noto-sans-arabic', prefix: 'NotoSansArabic', lang: 'ar-AR', weights: [400, 600] },
  hebrew: { pkg: 'noto-sans-hebrew', prefix: 'NotoSansHebrew', lang: 'he-IL', weights: [400, 600] },
  thai: { pkg: 'noto-sans-thai', prefix: 'NotoSansThai', lang: 'th-TH', weights: [400, 600] },
  japanese: { pkg: 'noto-sans-jp', prefix: 'NotoSansJP', lang: 'ja-JP', weights: [600] },
  korean: { pkg: 'noto-sans-kr', prefix: 'NotoSansKR', lang: 'ko-KR', weights: [600] },
  'chinese-simplified': { pkg: 'noto-sans-sc', prefix: 'NotoSansSC', lang: 'zh-CN', weights: [600] },
  'chinese-traditional': { pkg: 'noto-sans-tc', prefix: 'NotoSansTC', lang: 'zh-TW', weights: [600] },
};

const WEIGHT_DIRECTORY: Readonly<Record<Weight, string>> = { 400: '400Regular', 600: '600SemiBold' };

function readFont(pkg: string, prefix: string, weight: Weight): ArrayBuffer {
  const directory = WEIGHT_DIRECTORY[weight];
  const file = fs.readFileSync(require.resolve(`@expo-google-fonts/${pkg}/${directory}/${prefix}_${directory}.ttf`));
  // An ArrayBuffer of its own: satori copies a Buffer's bytes again before parsing, an ArrayBuffer not.
  return file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength);
}

let base: Font[] | null = null;
const faces = new Map<ScriptFace, Font[]>();
const sets = new Map<string, Font[]>();

function baseFonts(): Font[] {
  base ??= ([400, 600] as const).map((weight) => ({
    name: FONT_FAMILY,
    data: readFont('noto-sans', 'NotoSans', weight),
    weight,
    style: 'normal' as const,
  }));
  return base;
}

function faceFonts(face: ScriptFace): Font[] {
  let fonts = faces.get(face);
  if (fonts === undefined) {
    const { pkg, prefix, lang, weights } = FACES[face];
    fonts = weights.map((weight) => ({ name: `${FONT_FAMILY} ${face}`, data: readFont(pkg, prefix, weight), weight, style: 'normal' as const, lang }));
    faces.set(face, fonts);
  }
  return fonts;
}

/**
 * cardFonts returns Noto Sans followed by the faces given (in the order given), read on first use.
 * The same set always gets the same array: satori keeps its parsed fonts per array, so a new array
 * would mean parsing megabytes of fonts again.
 */
export function cardFonts(extra: readonly ScriptFace[] = []): Font[] {
  const key = extra.join(',');
  let fonts = sets.get(key);
  if (fonts === undefined) {
    fonts = [...baseFonts(), ...extra.flatMap(faceFonts)];
    sets.set(key, fonts);
  }
  return fonts;
}

/** loadedFonts lists the faces read so far and the bytes of their font files, for memory reports. */
export function loadedFonts(): { face: ScriptFace | 'base'; bytes: number }[] {
  const size = (fonts: Font[]) => fonts.reduce((sum, font) => sum + (font.data as ArrayBuffer).byteLength, 0);
  return [...(base ? [{ face: 'base' as const, bytes: size(base) }] : []), ...[...faces].map(([face, fonts]) => ({ face, bytes: size(fonts) }))];
}
