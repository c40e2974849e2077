/**
 * Fitting the text: a card shows the whole text of a 2,000-character prose entry, in every script
 * whose letters are about as wide as Latin ones; Chinese, Japanese and Korean, whose characters are
 * square, fit as many characters as docs/share-image.md promises and end a longer text with "…".
 *
 * What was drawn is read from the card's own layout, written with text as <text> elements (one per
 * word, space or character) instead of outlines: the same layout as the card's, in readable form.
 */
import { describe, expect, it } from 'vitest';
import { TEXT_AREA } from '../../src/formats/share-image/card.ts';
import { fitTextSize, renderShareImage, renderShareSvg } from '../../src/formats/share-image/render.ts';

const appName = 'Nonsense Entry Service';
const codePoints = (text: string) => [...text].length;

/** Running prose of the sentences given, a paragraph every four, cut to `length` characters ending in a full stop. */
function prose(length: number, sentences: readonly string[]): string {
  let text = '';
  for (let i = 0; codePoints(text) < length; i++) text += (i === 0 ? '' : i % 4 === 0 ? '\n' : ' ') + sentences[i % sentences.length];
  return `${[...text].slice(0, length - 1).join('')}.`;
}

const ENGLISH = [
  'Every morning the committee of geese gathered by the pond to argue about the bread, which had been late again, and about the heron, who insisted that he was only passing through.',
  'Nobody believed him. He had been passing through since April, standing on one leg by the reeds and staring at the water as if it owed him money.',
  'The youngest goose proposed a petition. The oldest proposed lunch. After a short vote, they proposed both, in that order, and adjourned until the weather improved.',
  "By noon it was raining, so the meeting was moved under the willow, where the ducks had already claimed the driest spot and refused to discuss it.",
];
const LONG_WORDS = [
  'Incomprehensibly, the internationalization subcommittee recommended counterrevolutionary telecommunications infrastructure, notwithstanding uncharacteristically disproportionate responsibilities.',
  'Institutionalisation of extraordinarily overcomplicated administrative thoroughfares, reconsiderations and misunderstandings characterised the interdepartmental correspondence.',
];
const RUSSIAN = [
  'Каждое утро комитет гусей собирался у пруда, чтобы поспорить о хлебе, который снова опоздал, и о цапле, которая уверяла, что она здесь проездом.',
  'Никто ей не верил. Она была здесь проездом с апреля, стояла на одной ноге у камышей и смотрела на воду так, будто вода ей задолжала.',
];
const ARABIC = [
  'اجتمعت لجنة الإوز عند الفجر لمناقشة البركة والطقس ومسألة الخبز، الذي تأخر مرة أخرى، ومسألة مالك الحزين الذي أصر على أنه كان مارا فقط.',
  'لم يصدقه أحد. كان مارا منذ أبريل، يقف على ساق واحدة بجانب القصب ويحدق في الماء كأن الماء مدين له بالمال.',
];
const CHINESE = '鹅委员会在黎明时开会，讨论了池塘、天气和面包的问题。面包又迟到了，苍鹭坚持说他只是路过。没有人相信他，因为他从四月起就一直站在芦苇旁边。';

/** drawn is what the card's layout draws of `text`: the content of its <text> elements, in document order. */
async function drawn(text: string): Promise<{ pieces: string[]; bottom: number }> {
  const svg = await renderShareSvg({ text, emojis: new Map(), appName }, { outlines: false });
  const pieces: string[] = [];
  let bottom = 0;
  for (const [, y, content] of svg.matchAll(/<text [^>]*?y="([\d.]+)"[^>]*>([^<]*)<\/text>/g)) {
    pieces.push(content!.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&'));
    bottom = Math.max(bottom, Number(y));
  }
  return { pieces, bottom };
}

const letters = (text: string) => text.replace(/\s/g, '');
const sorted = (text: string) => [...letters(text)].sort().join('');

describe('a card of 2,000 characters of prose', () => {
  const cases: Record<string, string> = {
    'English with paragraphs': prose(2000, ENGLISH),
    'English of long words': prose(2000, LONG_WORDS),
    Russian: prose(2000, RUSSIAN),
  };
  for (const [name, text] of Object.entries(cases)) {
    it(`draws every word, to the last: ${name}`, async () => {
      expect(codePoints(text)).toBe(2000);
      const style = await fitTextSize(text);
      expect(style.maxLines).toBeUndefined();
      const { pieces, bottom } = await drawn(text);
      // Left to right, the pieces come in the order of the text: all of it, nothing added.
      expect(letters(pieces.join(''))).toBe(letters(text));
      expect(bottom).toBeLessThanOrEqual(TEXT_AREA.height);
    });
  }

  it('draws every word, to the last: Arabic (right to left)', async () => {
    const text = prose(2000, ARABIC);
    expect((await fitTextSize(text)).maxLines).toBeUndefined();
    const { pieces, bottom } = await drawn(text);
    // Lines are written in visual order; every character is there, and no ellipsis.
    expect(sorted(pieces.join(''))).toBe(sorted(text));
    expect(bottom).toBeLessThanOrEqual(TEXT_AREA.height);
  });

  it('is fitted in a bounded number of layout passes', async () => {
    // The render asks `cancelled` once before each fitting pass and three times besides.
    for (const text of [prose(2000, ENGLISH), CHINESE.repeat(30).slice(0, 1000)]) {
      let asked = 0;
      await renderShareImage({ text, emojis: new Map(), appName }, { cancelled: () => (asked++, false) });
      expect(asked - 3).toBeLessThanOrEqual(3);
    }
  });
});

describe('a card of square characters (Chinese, Japanese, Korean)', () => {
  it('draws every character of 1,200 Chinese characters', async () => {
    const text = CHINESE.repeat(30).slice(0, 1200);
    expect((await fitTextSize(text)).maxLines).toBeUndefined();
    const { pieces } = await drawn(text);
    expect(letters(pieces.join(''))).toBe(letters(text));
  });

  it('ends 2,000 Chinese characters with "…" after the lines that fit', async () => {
    const text = CHINESE.repeat(30).slice(0, 2000);
    const style = await fitTextSize(text);
    expect(style.maxLines).toBeGreaterThan(0);
    const { pieces, bottom } = await drawn(text);
    const shown = letters(pieces.join(''));
    expect(shown.endsWith('…')).toBe(true);
    expect(text.startsWith(shown.slice(0, -1))).toBe(true);
    expect(codePoints(shown)).toBeGreaterThan(1200);
    expect(bottom).toBeLessThanOrEqual(TEXT_AREA.height);
  });
});
