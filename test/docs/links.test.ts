/**
 * Every link between the repository's Markdown files lands: the file exists, and an anchor (`#...`)
 * names a heading of the file it points into, as GitHub derives heading anchors.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** The Markdown files under version control (node_modules and build output are not). */
const FILES = execFileSync('git', ['ls-files', '*.md'], { encoding: 'utf8' }).split('\n').filter(Boolean);

/** withoutCode blanks fenced code blocks, where `# ...` is a comment and `[x](#y)` is not a link. */
function withoutCode(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** slug is the anchor GitHub gives a heading: its text without markup and punctuation, lower case, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, ''); // inline HTML
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** anchors lists the anchors of a Markdown file's headings, repeated ones numbered as GitHub does. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const match of withoutCode(text).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) found.add(match[1]!);
  return found;
}

interface Link {
  from: string;
  target: string;
  anchor: string | null;
}

/** links lists a file's links to itself and to other files of the repository (not to the web). */
function links(file: string): Link[] {
  const text = withoutCode(fs.readFileSync(file, 'utf8')).replace(/`[^`\n]*`/g, '');
  const found: Link[] = [];
  for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const href = match[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue;
    const [pathPart, anchor] = href.split('#', 2) as [string, string | undefined];
    const target = pathPart === '' ? file : path.join(path.dirname(file), decodeURIComponent(pathPart));
    found.push({ from: file, target, anchor: anchor === undefined ? null : decodeURIComponent(anchor) });
  }
  return found;
}

describe('links between the Markdown files', () => {
  const all = FILES.flatMap(links);

  it('are found (the check is not vacuous)', () => {
    expect(FILES).toContain('README.md');
    expect(all.filter((link) => link.anchor !== null).length).toBeGreaterThan(5);
  });

  it('point to files that exist', () => {
    const missing = all.filter((link) => !fs.existsSync(link.target)).map((link) => `${link.from} → ${link.target}`);
    expect(missing).toEqual([]);
  });

  it('point to headings that exist', () => {
    const cache = new Map<string, Set<string>>();
    const dead = all
      .filter((link) => link.anchor !== null && link.target.endsWith('.md') && fs.existsSync(link.target))
      .filter((link) => {
        let known = cache.get(link.target);
        if (known === undefined) cache.set(link.target, (known = anchors(fs.readFileSync(link.target, 'utf8'))));
        return !known.has(link.anchor!);
      })
      .map((link) => `${link.from} → ${link.target}#${link.anchor}`);
    expect(dead).toEqual([]);
  });

  it('derive anchors as GitHub does', () => {
    expect(slug('Memory: the allocator\'s settings')).toBe('memory-the-allocators-settings');
    expect(slug('Behind a proxy: addresses and links')).toBe('behind-a-proxy-addresses-and-links');
    expect(slug('Backup and restore (`npm run bench:backup`)')).toBe('backup-and-restore-npm-run-benchbackup');
    expect(slug('Every script')).toBe('every-script');
  });
});
