import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { badgeLetter, CARD_HEIGHT, CARD_WIDTH } from '../../src/formats/share-image/card.ts';
import { fitText, renderShareImage, renderShareSvg, withEmojiGlyphs, type CustomEmojiImage } from '../../src/formats/share-image/render.ts';
import { CLIENT_VARIABLE_WORDS, cardText, customEmojiNames, scanCustomEmojis } from '../../src/formats/share-image/text.ts';
import { twemojiDataUri, twemojiFileName } from '../../src/formats/share-image/twemoji.ts';

const demoEmoji = (name: string): CustomEmojiImage => ({
  contentType: 'image/png',
  image: fs.readFileSync(path.join(import.meta.dirname, '../../demo/emojis', `${name}.png`)),
});
const emojis = new Map([
  ['toast', demoEmoji('toast')],
  ['blobcat', demoEmoji('blobcat')],
]);
const appName = 'Nonsense Entry Service';

/** pngSize reads width and height from a PNG's IHDR chunk, after checking the signature. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
  expect(png.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

const PROSE = 'The committee of geese met at dawn to discuss the pond, the weather, and the bread situation. ';
const longest = PROSE.repeat(30).slice(0, 2000).trim();

describe('renderShareImage', () => {
  const cases: Record<string, string> = {
    short: 'Socks graduate.',
    multiline: 'An old silent pond\nA frog jumps into the pond—\nSplash! Silence again.',
    'Unicode emoji': '🦆 The duck does not know what day it is. 🍕 👨‍👩‍👧 ❤️ 🏳️‍🌈',
    'custom emoji': 'Rate my breakfast: :toast: :toast: :blobcat: /10',
    RTL: 'مرحبا بالعالم — the card still renders.',
    CJK: 'こんにちは、世界。日本語のテキストと中文文本。',
    '2,000 characters': longest,
    'hundreds of lines': Array.from({ length: 300 }, (_, i) => `line ${i}`).join('\n'),
    'one endless word': 'x'.repeat(2000),
  };
  for (const [name, text] of Object.entries(cases)) {
    it(`renders a 1200×630 PNG: ${name}`, async () => {
      expect(pngSize(await renderShareImage({ text, emojis, appName }))).toEqual({ width: 1200, height: 630 });
    });
  }

  it('gives the same bytes for the same input, and other bytes for another text or service name', async () => {
    const input = { text: 'Village fete ruined by overly competitive marrow. :toast:', emojis, appName };
    const first = await renderShareImage(input);
    expect((await renderShareImage({ ...input, emojis: new Map(emojis) })).equals(first)).toBe(true);
    expect((await renderShareImage({ ...input, text: `${input.text}!` })).equals(first)).toBe(false);
    expect((await renderShareImage({ ...input, appName: 'Other' })).equals(first)).toBe(false);
  });
});

describe('renderShareSvg', () => {
  it('draws custom emojis from their images and Unicode emoji from Twemoji', async () => {
    const svg = await renderShareSvg({ text: 'Breakfast :toast: 🦆', emojis, appName: 'Quirk Hub' });
    const toast = Buffer.from(emojis.get('toast')!.image).toString('base64');
    expect(svg).toContain(`data:image/png;base64,${toast}`);
    expect(svg).toContain('data:image/svg+xml;base64,');
    expect(svg).not.toContain(':toast:');
    expect(svg).toMatch(/^<svg width="1200" height="630"/);
  });

  it('leaves unknown and WebP emojis as text', () => {
    const webp = { contentType: 'image/webp', image: Buffer.from('RIFF\0\0\0\0WEBP') };
    const { text, graphemeImages } = withEmojiGlyphs(':nope: :toast: :wavy:', new Map([...emojis, ['wavy', webp]]));
    expect(text).toMatch(/^:nope: \uE000 :wavy:$/);
    expect(Object.keys(graphemeImages)).toEqual(['\uE000']);
  });

  it('picks private-use characters the text does not already contain', () => {
    const { text, graphemeImages } = withEmojiGlyphs('\uE000 :toast:', emojis);
    expect(text).toBe('\uE000 \uE001');
    expect(Object.keys(graphemeImages)).toEqual(['\uE001']);
  });
});

describe('fitText', () => {
  it('sets short texts large and long ones small, and fits the longest entry without clamping', async () => {
    const short = await fitText('Socks graduate.', {});
    const medium = await fitText(PROSE.repeat(4), {});
    const long = await fitText(longest, {});
    expect(short.fontSize).toBeGreaterThanOrEqual(80);
    expect(medium.fontSize).toBeLessThan(short.fontSize);
    expect(long.fontSize).toBeLessThan(medium.fontSize);
    expect(long.fontSize).toBeGreaterThanOrEqual(18);
    expect(long.maxLines).toBeUndefined();
  });

  it('keeps line breaks: more lines need a smaller size', async () => {
    const oneLine = await fitText('one two three four five six', {});
    const sixLines = await fitText('one\ntwo\nthree\nfour\nfive\nsix', {});
    expect(sixLines.fontSize).toBeLessThan(oneLine.fontSize);
  });

  it('clamps what cannot fit even at the smallest size', async () => {
    const style = await fitText(Array.from({ length: 300 }, (_, i) => `line ${i}`).join('\n'), {});
    expect(style.maxLines).toBeGreaterThan(5);
    expect(style.maxLines! * style.fontSize * style.lineHeight).toBeLessThanOrEqual(CARD_HEIGHT);
  });
});

describe('cardText', () => {
  const variables = new Map([
    ['$ANIMAL$', ['goose', 'beaver', 'capybara', 'hedgehog', 'llama', 'penguin']],
    ['$ODD$', ['a $AUTHOR$ value']],
  ]);

  it('replaces the client-side variables with neutral words and the service name', () => {
    expect(cardText('$AUTHOR$ posted in $CHANNEL$ on $SERVER$ via ${app_name}.', variables, 'u', 'Quirk Hub')).toBe(
      `${CLIENT_VARIABLE_WORDS.$AUTHOR$} posted in ${CLIENT_VARIABLE_WORDS.$CHANNEL$} on ${CLIENT_VARIABLE_WORDS.$SERVER$} via Quirk Hub.`,
    );
  });

  it('picks server values by the UUID: the same entry always reads the same', () => {
    const raw = '$ANIMAL$ $ANIMAL$ $ANIMAL$ $ANIMAL$ $ANIMAL$ $ANIMAL$';
    const a = cardText(raw, variables, '8acee36d-429e-4d93-bea6-f7924f1e6ba5', appName);
    expect(cardText(raw, variables, '8acee36d-429e-4d93-bea6-f7924f1e6ba5', appName)).toBe(a);
    for (const word of a.split(' ')) expect(variables.get('$ANIMAL$')).toContain(word);
    const others = ['c4c7499d-8a06-4e49-9bf4-912aefe677cf', '46e4087a-c7b9-44fa-97d9-fbfd86d62295', 'a25b207a-881d-47cf-b7a9-5f69b624a105'];
    expect(others.some((uuid) => cardText(raw, variables, uuid, appName) !== a)).toBe(true);
  });

  it('substitutes in one pass and normalises line breaks', () => {
    expect(cardText('$ODD$\r\nnext\rlast', variables, 'u', appName)).toBe('a $AUTHOR$ value\nnext\nlast');
  });
});

describe('custom emoji codes', () => {
  const known = (name: string) => name === 'toast' || name === 'blobcat';

  it('finds known names once each, even when an unknown one shares a colon', () => {
    expect(customEmojiNames(':nope:toast: :toast: :blobcat: :x: ::toast::', known)).toEqual(['toast', 'blobcat']);
    expect(scanCustomEmojis(':nope:toast:', known, (name) => `[${name}]`)).toBe(':nope[toast]');
  });
});

describe('twemoji', () => {
  it('names files the way Twemoji does', () => {
    expect(twemojiFileName('❤️')).toBe('2764');
    expect(twemojiFileName('🦆')).toBe('1f986');
    expect(twemojiFileName('🏳️‍🌈')).toBe('1f3f3-fe0f-200d-1f308');
  });

  it('returns SVG data URIs for known emoji and nothing for others', () => {
    expect(twemojiDataUri('🍕')).toMatch(/^data:image\/svg\+xml;base64,/);
    // Written with selectors (1f441-fe0f-200d-1f5e8-fe0f) where Twemoji's file has none.
    expect(twemojiDataUri('\u{1f441}\ufe0f\u200d\u{1f5e8}\ufe0f')).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(twemojiDataUri('a')).toBe('');
  });
});

describe('card', () => {
  it('is the Open Graph size', () => {
    expect([CARD_WIDTH, CARD_HEIGHT]).toEqual([1200, 630]);
  });

  it("shows the service name's first grapheme in the badge", () => {
    expect(badgeLetter(' nonsense hub')).toBe('N');
    expect(badgeLetter('👨‍👩‍👧 Family')).toBe('👨‍👩‍👧');
  });
});
