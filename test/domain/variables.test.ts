import { describe, expect, it } from 'vitest';
import { isVariableName, seededPick, substitute, tokensOf } from '../../src/domain/variables.ts';

const vars = new Map<string, string[]>([
  ['$ANIMAL$', ['cat', 'goose']],
  ['$FOOD$', ['$ANIMAL$ pie']],
  ['${colour}', ['red']],
  ['$ONE$', ['only']],
]);
const first = () => 0;

describe('substitute', () => {
  it('leaves a text without tokens alone', () => {
    expect(substitute('plain text, $5 and 10$', vars)).toEqual({ text: 'plain text, $5 and 10$', hasVariables: false });
  });

  it('replaces server variables of both token forms', () => {
    expect(substitute('a $ANIMAL$ in ${colour}', vars, first)).toEqual({ text: 'a cat in red', hasVariables: true });
  });

  it('treats unknown tokens as plain text', () => {
    expect(substitute('$UNKNOWN$ and ${nope}', vars)).toEqual({ text: '$UNKNOWN$ and ${nope}', hasVariables: false });
  });

  it('does not take tokens that break the grammar', () => {
    expect(substitute('$animal$ $Animal$ ${Colour} $1A$ $$', vars).hasVariables).toBe(false);
  });

  it('finds a known token right after an unknown one', () => {
    expect(substitute('$FOO$ONE$', vars, first).text).toBe('$FOOonly');
    expect(substitute('$$ONE$', vars, first).text).toBe('$only');
  });

  it('replaces in one pass: a value is never expanded again', () => {
    expect(substitute('$FOOD$', vars, first).text).toBe('$ANIMAL$ pie');
  });

  it('picks independently for each occurrence', () => {
    let n = 0;
    const alternate = (length: number) => n++ % length;
    expect(substitute('$ANIMAL$ vs $ANIMAL$', vars, alternate).text).toBe('cat vs goose');
  });

  it('keeps client-side variables literally but reports them', () => {
    const result = substitute('$AUTHOR$ on $SERVER$ in $CHANNEL$ via ${app_name}', vars);
    expect(result).toEqual({ text: '$AUTHOR$ on $SERVER$ in $CHANNEL$ via ${app_name}', hasVariables: true });
  });

  it('handles odd Unicode around tokens', () => {
    expect(substitute('🦆$ANIMAL$🦆 é\u0301', vars, first).text).toBe('🦆cat🦆 é\u0301');
  });

  it('is reproducible with a seeded pick and varies across seeds', () => {
    const text = Array.from({ length: 20 }, () => '$ANIMAL$').join(' ');
    const a = substitute(text, vars, seededPick('6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11')).text;
    const b = substitute(text, vars, seededPick('6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11')).text;
    const c = substitute(text, vars, seededPick('00000000-0000-4000-8000-000000000000')).text;
    expect(a).toBe(b);
    expect(a).not.toBe(c);
    expect(a).toContain('cat');
    expect(a).toContain('goose');
  });

  it('picks uniformly with the default random source', () => {
    const counts = { cat: 0, goose: 0 };
    for (let i = 0; i < 4000; i++) counts[substitute('$ANIMAL$', vars).text as 'cat' | 'goose']++;
    // 4000 fair coin flips stay within 1800..2200 with overwhelming probability (about 6 sigma).
    expect(counts.cat).toBeGreaterThan(1800);
    expect(counts.goose).toBeGreaterThan(1800);
  });
});

describe('isVariableName', () => {
  it('follows the grammar', () => {
    for (const ok of ['$A$', '$ANIMAL_2$', '${a}', '${app_name}']) expect(isVariableName(ok)).toBe(true);
    for (const bad of ['$a$', '$2A$', '${A}', '${_a}', 'ANIMAL', '$ANIMAL', '$AN IMAL$', '$$']) expect(isVariableName(bad)).toBe(false);
  });
});

describe('tokensOf', () => {
  it('lists each token of the grammar once, in order, known or not, as substitute scans them', () => {
    expect(tokensOf('no tokens, $5 and $lower$')).toEqual([]);
    expect(tokensOf('$B$ and ${a} and $B$ then $AUTHOR$')).toEqual(['$B$', '${a}', '$AUTHOR$']);
    // Scanned at every `$`, like substitute: an unknown token does not hide one that starts at its end.
    expect(tokensOf('$FOO$BAR$')).toEqual(['$FOO$', '$BAR$']);
  });
});
