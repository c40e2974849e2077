/**
 * The site's static files (CSS, JS, icon, fonts, three.js), read once at start and served from memory. Pages
 * link them with a `?v=<hash>` of their content, so a browser may keep them for a year without asking
 * again, and a new version of a file is a new URL.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Asset {
  body: Buffer;
  contentType: string;
  /** The first 16 hex digits of the content's SHA-256: the ETag and the `v` of links. */
  hash: string;
}

const STATIC_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'static');

const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.ttf': 'font/ttf',
  '.webmanifest': 'application/manifest+json',
};

// The same Noto Sans files the share card is drawn with, so the page and its card look alike.
const require = createRequire(import.meta.url);
const FONTS: Record<string, string> = {
  'noto-sans-400.ttf': '@expo-google-fonts/noto-sans/400Regular/NotoSans_400Regular.ttf',
  'noto-sans-600.ttf': '@expo-google-fonts/noto-sans/600SemiBold/NotoSans_600SemiBold.ttf',
};

// three.js's ES module build, for the galaxy page. three.module.js imports `./three.core.js`, which is
// served beside it under that name.
const THREE_BUILD = path.dirname(fileURLToPath(import.meta.resolve('three')));
const THREE_MODULES = ['three.module.js', 'three.core.js'];

function asset(file: string, body: Buffer): Asset {
  const contentType = TYPES[path.extname(file)];
  if (contentType === undefined) throw new Error(`No content type is known for the static file ${file}`);
  return { body, contentType, hash: createHash('sha256').update(body).digest('hex').slice(0, 16) };
}

function loadAssets(): ReadonlyMap<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const file of fs.readdirSync(STATIC_DIR)) {
    if (file.startsWith('.')) continue;
    assets.set(file, asset(file, fs.readFileSync(path.join(STATIC_DIR, file))));
  }
  for (const [file, module] of Object.entries(FONTS)) assets.set(file, asset(file, fs.readFileSync(require.resolve(module))));
  for (const file of THREE_MODULES) assets.set(file, asset(file, fs.readFileSync(path.join(THREE_BUILD, file))));
  return assets;
}

/** Every static file by name; about 3.5 MB, most of it three.js (2.1 MB) and the two fonts. */
export const ASSETS = loadAssets();

/** assetUrl is the versioned address of a static file; it throws for a file that does not exist. */
export function assetUrl(file: string): string {
  const found = ASSETS.get(file);
  if (found === undefined) throw new Error(`There is no static file ${file}`);
  return `/static/${file}?v=${found.hash}`;
}
