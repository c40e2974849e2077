/**
 * The static scripts as ES modules (web/assets.ts): served under flat names, their relative imports
 * rewritten to versioned addresses, a module's hash covering what it imports, and the start refused
 * for an import that cannot be served as written.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadAssets } from '../../src/web/assets.ts';
import { tempDir } from '../helper.ts';

const dirs: string[] = [];

/** site writes `files` (path → text) into a new directory. */
function site(files: Record<string, string>): string {
  const dir = tempDir();
  dirs.push(dir);
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

const body = (assets: ReturnType<typeof loadAssets>, name: string) => assets.get(name)!.body.toString();

afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('static script modules', () => {
  const files = {
    'page.js': "import { a } from './page/a.js';\nimport {\n  b,\n} from './page/b.js';\n// import('./not/a/module.js') in a comment\nconsole.log(a, b);\n",
    'page/a.js': "export { b as a } from './b.js';\n",
    'page/b.js': "import '../lib/c.js';\nexport const b = 'from ./b.js';\n",
    'lib/c.js': 'export const c = 1;\n',
    'site.css': 'body {}\n',
    'tsconfig.json': '{}\n',
  };

  it('serves each under a flat name, its imports rewritten to versioned addresses, and lists what a page imports', () => {
    const assets = loadAssets(site(files));
    expect([...assets.keys()].filter((name) => !/^(noto|three)/.test(name)).sort()).toEqual(['lib-c.js', 'page-a.js', 'page-b.js', 'page.js', 'site.css']);
    const hash = (name: string) => assets.get(name)!.hash;
    expect(body(assets, 'page.js')).toBe(
      `import { a } from './page-a.js?v=${hash('page-a.js')}';\nimport {\n  b,\n} from './page-b.js?v=${hash('page-b.js')}';\n// import('./not/a/module.js') in a comment\nconsole.log(a, b);\n`,
    );
    expect(body(assets, 'page-a.js')).toBe(`export { b as a } from './page-b.js?v=${hash('page-b.js')}';\n`);
    // A string that looks like a path is no import.
    expect(body(assets, 'page-b.js')).toBe(`import './lib-c.js?v=${hash('lib-c.js')}';\nexport const b = 'from ./b.js';\n`);
    expect(assets.get('page.js')!.imports).toEqual(['lib-c.js', 'page-a.js', 'page-b.js']);
    expect(assets.get('page.js')!.contentType).toBe('text/javascript; charset=utf-8');
  });

  it('gives a page a new address when a module it imports, however deep, changes', () => {
    const before = loadAssets(site(files));
    const after = loadAssets(site({ ...files, 'lib/c.js': 'export const c = 2;\n' }));
    for (const name of ['lib-c.js', 'page-b.js', 'page-a.js', 'page.js']) expect(after.get(name)!.hash, name).not.toBe(before.get(name)!.hash);
    expect(after.get('site.css')!.hash).toBe(before.get('site.css')!.hash);
  });

  it('refuses to start with an import it cannot serve as written', () => {
    expect(() => loadAssets(site({ 'a.js': "import { x } from './missing.js';\n" }))).toThrow(/a\.js imports \.\/missing\.js, which is not a script under static/);
    expect(() => loadAssets(site({ 'a.js': "import './b.js';\n", 'b.js': "import './a.js';\n" }))).toThrow(/cycle/);
    expect(() => loadAssets(site({ 'a.js': "const x = await import('./b.js');\n", 'b.js': '' }))).toThrow(/a\.js imports \.\/b\.js in a form not rewritten/);
    expect(() => loadAssets(site({ 'a/b.js': '', 'a-b.js': '' }))).toThrow(/same name/);
  });
});
