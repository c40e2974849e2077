/**
 * The site's faces of other scripts (Arabic, Hebrew, Devanagari, Thai, Japanese, Korean, Simplified
 * and Traditional Chinese), in the weights the site uses: the files the share cards are drawn with,
 * from their `@expo-google-fonts/noto-sans-*` packages, under `/static/noto-sans-<script>-<weight>.ttf`
 * (site.css names them). Unlike the other static files they are not held in memory: the Chinese,
 * Japanese and Korean faces are 5 to 11 MB each and a page fetches one only for text in its script,
 * so each is streamed from its file; its hash (the ETag and `v`) is computed on the first request.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';

export interface ScriptFont {
  path: string;
  size: number;
  /** The first 16 hex digits of the content's SHA-256, as for the other static files. */
  hash: string;
}

export const SCRIPT_FONT_TYPE = 'font/ttf';

const require = createRequire(import.meta.url);

/** The script's name in the URL, and its package and file prefix. */
const SCRIPTS: ReadonlyArray<[name: string, prefix: string]> = [
  ['arabic', 'NotoSansArabic'],
  ['hebrew', 'NotoSansHebrew'],
  ['devanagari', 'NotoSansDevanagari'],
  ['thai', 'NotoSansThai'],
  ['jp', 'NotoSansJP'],
  ['kr', 'NotoSansKR'],
  ['sc', 'NotoSansSC'],
  ['tc', 'NotoSansTC'],
];
const WEIGHTS: ReadonlyArray<[weight: number, directory: string]> = [
  [400, '400Regular'],
  [600, '600SemiBold'],
];

/** The module path of each file by its name under /static/. */
const FILES: ReadonlyMap<string, string> = new Map(
  SCRIPTS.flatMap(([name, prefix]) =>
    WEIGHTS.map(([weight, directory]) => [`noto-sans-${name}-${weight}.ttf`, `@expo-google-fonts/noto-sans-${name}/${directory}/${prefix}_${directory}.ttf`] as const),
  ),
);

const found = new Map<string, Promise<ScriptFont>>();

async function measure(path: string): Promise<ScriptFont> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of fs.createReadStream(path)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { path, size, hash: hash.digest('hex').slice(0, 16) };
}

/** scriptFont returns the face served as `file`, or undefined when `file` is none of them. */
export function scriptFont(file: string): Promise<ScriptFont> | undefined {
  const module = FILES.get(file);
  if (module === undefined) return undefined;
  let font = found.get(file);
  if (font === undefined) {
    font = measure(require.resolve(module));
    found.set(file, font);
    // A failed read is tried again by the next request.
    font.catch(() => found.delete(file));
  }
  return font;
}
