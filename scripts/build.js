#!/usr/bin/env node
/**
 * Builds the service into dist/: TypeScript compiled to JavaScript (tsconfig.build.json, imports of
 * `./x.ts` rewritten to `./x.js`), plus every other file under src/ that code loads by path (the
 * site's static assets). Types are not checked here (`npm run typecheck` does that), which keeps a
 * build to a few seconds; the emitted JavaScript is the same either way.
 *
 * The build goes to a temporary folder that replaces dist/ at the end, so a process starting
 * meanwhile never sees half a build, and dist/.build.json records a fingerprint of the sources so
 * that `isBuildFresh()` can tell a stale build.
 *
 *   node scripts/build.js            # build (what `npm run build` and `prepare` run)
 *   node scripts/build.js --if-stale # build only when src/ changed since the last build
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = path.join(ROOT, 'src');
const DIST = path.join(ROOT, 'dist');
const STAMP = '.build.json';
/** Besides src/, what the output depends on. */
const INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'scripts/build.js', 'package-lock.json'];
/**
 * Packages published as hundreds of small ES modules, each bundled into one file under dist/vendor/
 * that the compiled code imports instead. Node 20 resolves, reads, compiles and links every ES module
 * on its own: these two were 635 of the 778 modules the service loaded before its first answer, and
 * bundled they load in a fifth of the time (docs/performance.md, "Start"). Only bare imports of the
 * whole package are used (`from 'kysely'`); the tests and tools that run src/ load them as published.
 */
const VENDORED = ['kysely', 'typebox'];
/**
 * The command (dist/cli.js) is then bundled with its pure-JavaScript dependencies into one file, which
 * Node loads in half the time of its 600-odd modules (docs/performance.md, "Start"). The compiled tree
 * stays beside it for the worker threads and the tests. Left out of the bundle, and loaded from
 * node_modules as published: native addons, and packages that find files next to their own code
 * (worker scripts, static assets, their package.json) or that the service loads only when configured.
 */
const UNBUNDLED = [
  'better-sqlite3',
  '@resvg/resvg-js',
  'sharp',
  'piscina',
  'pino',
  'thread-stream',
  '@fastify/swagger',
  '@fastify/swagger-ui',
  'pg',
  'pg-native',
  'ioredis',
  '@electric-sql/pglite',
];

function walk(dir, files = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, files);
    else if (entry.isFile()) files.push(full);
  }
  return files;
}

/** sourceFingerprint hashes the path, size and modification time of every input file. */
export function sourceFingerprint() {
  const hash = createHash('sha256');
  const files = [...walk(SRC), ...INPUTS.map((file) => path.join(ROOT, file))].sort();
  for (const file of files) {
    const stat = fs.statSync(file);
    hash.update(`${path.relative(ROOT, file)}\0${stat.size}\0${stat.mtimeMs}\n`);
  }
  return hash.digest('hex');
}

/** isBuildFresh tells whether dist/ holds a build of the current sources. */
export function isBuildFresh() {
  try {
    const stamp = JSON.parse(fs.readFileSync(path.join(DIST, STAMP), 'utf8'));
    return stamp.fingerprint === sourceFingerprint();
  } catch {
    return false;
  }
}

/** build compiles src/ into dist/ (replacing it) and resolves with the time it took in ms. */
export async function build() {
  const started = performance.now();
  // Loaded here, not at the top: the command checks freshness through this module, and a production
  // install pruned of development dependencies has no esbuild.
  const { default: esbuild } = await import('esbuild');
  const fingerprint = sourceFingerprint();
  const out = path.join(ROOT, `.dist-${process.pid}`);
  fs.rmSync(out, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json'), '--noCheck', '--outDir', out], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) {
    fs.rmSync(out, { recursive: true, force: true });
    throw new Error(`the TypeScript compiler failed (exit ${result.status ?? result.signal})`);
  }
  vendor(esbuild, out);
  // Files that code reads by a path relative to its own module (src/web/static/*, ...).
  for (const file of walk(SRC)) {
    if (file.endsWith('.ts') || path.basename(file) === 'README.md') continue;
    const target = path.join(out, path.relative(SRC, file));
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(file, target);
  }
  try {
    await bundleCommand(esbuild, out);
  } catch (error) {
    fs.rmSync(out, { recursive: true, force: true });
    throw error;
  }
  fs.writeFileSync(path.join(out, STAMP), `${JSON.stringify({ fingerprint, builtAt: new Date().toISOString() })}\n`);
  fs.rmSync(DIST, { recursive: true, force: true });
  try {
    fs.renameSync(out, DIST);
  } catch (error) {
    // Another build finished first and put its dist/ in place; it is built from the same sources.
    fs.rmSync(out, { recursive: true, force: true });
    if (!isBuildFresh()) throw error;
  }
  return performance.now() - started;
}

/**
 * vendor bundles each VENDORED package into `out/vendor/<name>.js` and points the compiled modules'
 * imports of it there.
 */
function vendor(esbuild, out) {
  for (const name of VENDORED) {
    esbuild.buildSync({
      stdin: { contents: `export * from '${name}';`, resolveDir: ROOT, sourcefile: `vendor-${name}.js` },
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      // Whitespace and syntax only: names stay readable in stack traces.
      minifyWhitespace: true,
      minifySyntax: true,
      legalComments: 'eof',
      outfile: path.join(out, 'vendor', `${name}.js`),
      logLevel: 'warning',
    });
  }
  const bare = new RegExp(`from '(${VENDORED.join('|')})'`, 'g');
  for (const file of walk(out)) {
    if (!file.endsWith('.js') || file.startsWith(path.join(out, 'vendor'))) continue;
    const code = fs.readFileSync(file, 'utf8');
    const rewritten = code.replace(bare, (_, name) => {
      const target = path.relative(path.dirname(file), path.join(out, 'vendor', `${name}.js`));
      return `from '${target.startsWith('.') ? target : `./${target}`}'`;
    });
    if (rewritten !== code) fs.writeFileSync(file, rewritten);
  }
}

/**
 * bundleCommand replaces `out/cli.js` with a bundle of it and everything it imports but UNBUNDLED.
 * Code that finds files relative to its own module (`new URL('./static/', import.meta.url)`, a
 * worker's script) still does: in each compiled module `import.meta.url` is replaced by the URL that
 * module has in the tree beside the bundle, so those paths resolve as before.
 */
function bundleCommand(esbuild, out) {
  const ownUrl = {
    name: 'own-url',
    setup(build) {
      build.onLoad({ filter: /\.js$/ }, (args) => {
        if (!args.path.startsWith(out + path.sep)) return undefined;
        const code = fs.readFileSync(args.path, 'utf8');
        if (!code.includes('import.meta.url')) return undefined;
        const own = `./${path.relative(out, args.path).split(path.sep).join('/')}`;
        return { contents: code.replaceAll('import.meta.url', `new URL(${JSON.stringify(own)}, import.meta.url).href`), loader: 'js' };
      });
    },
  };
  return esbuild.build({
    entryPoints: [path.join(out, 'cli.js')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: UNBUNDLED,
    plugins: [ownUrl],
    // CommonJS packages in an ES module bundle call `require` for Node's own modules.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    // Whitespace and syntax only: names stay readable in stack traces.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'eof',
    sourcemap: 'linked',
    outfile: path.join(out, 'cli.js'),
    allowOverwrite: true,
    logLevel: 'warning',
  });
}

/** ensureBuilt builds unless dist/ is already fresh; resolves with whether it built. */
export async function ensureBuilt() {
  if (isBuildFresh()) return false;
  await build();
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const ifStale = process.argv.includes('--if-stale');
  if (ifStale && isBuildFresh()) {
    console.log('dist/ is up to date.');
  } else {
    const ms = await build();
    console.log(`Built dist/ in ${(ms / 1000).toFixed(1)} s.`);
  }
}
