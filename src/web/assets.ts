/**
 * The site's static files (CSS, JS, icon, fonts, three.js), read once at start and served from memory. Pages
 * link them with a `?v=<hash>` of their content, so a browser may keep them for a year without asking
 * again, and a new version of a file is a new URL.
 *
 * The page scripts are ES modules in folders (`static/galaxy/stars.js`), served under one flat name
 * each (`/static/galaxy-stars.js`). Their relative imports are rewritten at start to the versioned
 * address of the module they name, so a module's hash covers the hashes of what it imports: a change
 * anywhere below a page's script gives that script a new URL too, and every module stays cacheable.
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
  /** For a script module: the served names of the modules it imports, directly or not. */
  imports?: readonly string[];
}

const STATIC_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'static');
/** Files beside the assets that are never served: the type check's settings for the scripts. */
const NOT_SERVED = new Set(['tsconfig.json']);

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

/**
 * A static import or re-export of a relative module, at the start of a line (as the scripts are
 * written): `import { a } from './a.js';`, `import './b.js';`, `export { c } from '../c.js';`.
 */
const RELATIVE_IMPORT = /^((?:import|export)\b[^'"();=]*?)'(\.\.?\/[^']+)'/gm;

/** A relative specifier outside a comment left without its version: one the rewriting did not recognise. */
const UNVERSIONED_IMPORT = /^(?![ \t]*(?:\/\/|\/?\*))[^\n]*?(?:\bfrom|\bimport)\s*\(?\s*['"](\.\.?\/[^'"?]+)['"]/m;

function asset(file: string, body: Buffer, imports?: readonly string[]): Asset {
  const contentType = TYPES[path.extname(file)];
  if (contentType === undefined) throw new Error(`No content type is known for the static file ${file}`);
  return { body, contentType, hash: createHash('sha256').update(body).digest('hex').slice(0, 16), ...(imports ? { imports } : {}) };
}

/** servedName is the flat name a file under static/ is served as: `galaxy/stars.js` → `galaxy-stars.js`. */
export function servedName(relative: string): string {
  return relative.split('/').join('-');
}

/** The files under `dir`, as paths relative to it with `/`, hidden files left out. */
function staticFiles(dir: string, prefix = ''): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name.startsWith('.') || NOT_SERVED.has(entry.name)) return [];
    const relative = prefix + entry.name;
    return entry.isDirectory() ? staticFiles(path.join(dir, entry.name), `${relative}/`) : [relative];
  });
}

/**
 * loadModules adds the scripts to `assets`, each after the modules it imports (which it names by
 * their versioned address). An import of a file that is not a script here, or a cycle, fails the start.
 */
function loadModules(dir: string, scripts: readonly string[], assets: Map<string, Asset>): void {
  const sources = new Map(scripts.map((file) => [file, fs.readFileSync(path.join(dir, file), 'utf8')]));
  const visiting = new Set<string>();
  const load = (file: string): Asset => {
    const done = assets.get(servedName(file));
    if (done !== undefined) return done;
    if (visiting.has(file)) throw new Error(`The static scripts import each other in a cycle through ${file}`);
    visiting.add(file);
    const imports = new Set<string>();
    const body = sources.get(file)!.replace(RELATIVE_IMPORT, (_, statement: string, specifier: string) => {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
      if (!sources.has(target)) throw new Error(`The static script ${file} imports ${specifier}, which is not a script under static/`);
      const imported = load(target);
      imports.add(servedName(target));
      for (const deeper of imported.imports ?? []) imports.add(deeper);
      return `${statement}'./${servedName(target)}?v=${imported.hash}'`;
    });
    visiting.delete(file);
    const missed = UNVERSIONED_IMPORT.exec(body);
    if (missed !== null) throw new Error(`The static script ${file} imports ${missed[1]} in a form not rewritten: write it on a line of its own`);
    const loaded = asset(file, Buffer.from(body), [...imports].sort());
    assets.set(servedName(file), loaded);
    return loaded;
  };
  for (const file of scripts) load(file);
}

/** loadAssets reads the static files of `dir` (the site's own unless given), fonts and three.js. */
export function loadAssets(dir = STATIC_DIR): ReadonlyMap<string, Asset> {
  const assets = new Map<string, Asset>();
  const files = staticFiles(dir);
  const names = new Set(files.map(servedName));
  if (names.size !== files.length) throw new Error('Two static files would be served under the same name');
  const scripts = files.filter((file) => file.endsWith('.js'));
  for (const file of files) if (!file.endsWith('.js')) assets.set(servedName(file), asset(file, fs.readFileSync(path.join(dir, file))));
  loadModules(dir, scripts, assets);
  for (const [file, module] of Object.entries(FONTS)) assets.set(file, asset(file, fs.readFileSync(require.resolve(module))));
  for (const file of THREE_MODULES) assets.set(file, asset(file, fs.readFileSync(path.join(THREE_BUILD, file))));
  return assets;
}

/** Every static file by its served name; about 3.5 MB, most of it three.js (2.1 MB) and the two fonts. */
export const ASSETS = loadAssets();

/** assetUrl is the versioned address of a static file; it throws for a file that does not exist. */
export function assetUrl(file: string): string {
  const found = ASSETS.get(file);
  if (found === undefined) throw new Error(`There is no static file ${file}`);
  return `/static/${file}?v=${found.hash}`;
}

/** moduleImports is what a page script imports, directly or not, by served name: what a page preloads. */
export function moduleImports(file: string): readonly string[] {
  return ASSETS.get(file)?.imports ?? [];
}
