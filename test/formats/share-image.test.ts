import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CARD_HEIGHT, CARD_WIDTH, TEXT_AREA, TEXT_BOX } from '../../src/formats/share-image/card.ts';
import sharp from 'sharp';
import satori from 'satori';
import { cardFonts } from '../../src/formats/share-image/fonts.ts';
import { fitTextSize as fitText, RenderCancelled, renderShareImage, renderShareSvg, withEmojiGlyphs, type CustomEmojiImage } from '../../src/formats/share-image/render.ts';
import { textDirection, textScripts, type TextScripts } from '../../src/formats/share-image/scripts.ts';
import { badgeLetter, CLIENT_VARIABLE_WORDS, displayText } from '../../src/domain/display-text.ts';
import { customEmojiNames, scanCustomEmojis } from '../../src/domain/emojis.ts';
import { twemojiDataUri, twemojiFileName } from '../../src/formats/share-image/twemoji.ts';

const demoEmoji = (name: string): CustomEmojiImage => ({
  contentType: 'image/png',
  image: fs.readFileSync(path.join(import.meta.dirname, '../../demo/emojis', `${name}.png`)),
});
// A WebP emoji (resvg cannot decode WebP itself): the toast, converted.
const wavy: CustomEmojiImage = { contentType: 'image/webp', image: await sharp(demoEmoji('toast').image).webp().toBuffer() };
const emojis = new Map([
  ['toast', demoEmoji('toast')],
  ['blobcat', demoEmoji('blobcat')],
  ['wavy', wavy],
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
    'WebP emoji': 'A :wavy: hello',
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

  it('gives each of several cards drawn at once the bytes it has when drawn alone', async () => {
    // Renders reuse the buffer the card is composed in; overlapping ones must not share it.
    const texts = ['The heron filed a complaint.', 'מים', 'Soup, again, on Tuesday. :toast:', 'x', 'A much longer text about nothing in particular, '.repeat(8), '🦆', 'Tea.\nMore tea.', 'Z'];
    const alone: Buffer[] = [];
    for (const text of texts) alone.push(await renderShareImage({ text, emojis, appName }));
    const together = await Promise.all(texts.map((text) => renderShareImage({ text, emojis, appName })));
    together.forEach((png, i) => expect(png.equals(alone[i]!)).toBe(true));
  });
});

describe('renderShareImage options and layout', () => {
  it('stops with RenderCancelled at the first step after cancelled() turns true', async () => {
    let asked = 0;
    await expect(renderShareImage({ text: 'Stop me', emojis, appName }, { cancelled: () => ++asked > 2 })).rejects.toBeInstanceOf(RenderCancelled);
    expect(asked).toBe(3);
  });

  /** redAt reads the red channel of one pixel of a card. */
  async function redAt(png: Buffer, x: number, y: number): Promise<number> {
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    return data[(y * info.width + x) * info.channels]!;
  }

  it('puts the accent rule on the left of left-to-right text and on the right of right-to-left text', async () => {
    const middle = 60 + Math.round(TEXT_BOX.height / 2);
    const ltr = await renderShareImage({ text: 'Geese', emojis, appName });
    const rtl = await renderShareImage({ text: 'إوز', emojis, appName });
    // The rule is pink to orange (red channel above 200); the background is dark indigo.
    expect(await redAt(ltr, 87, middle)).toBeGreaterThan(200);
    expect(await redAt(ltr, CARD_WIDTH - 87, middle)).toBeLessThan(150);
    expect(await redAt(rtl, CARD_WIDTH - 87, middle)).toBeGreaterThan(200);
    expect(await redAt(rtl, 87, middle)).toBeLessThan(150);
  });
});

describe('renderShareSvg', () => {
  it('draws the text area without masks or clipping, which resvg draws as layers the size of the canvas', async () => {
    const svg = await renderShareSvg({ text: 'Breakfast :toast: 🦆 and a long enough line to wrap twice over, at least.', emojis, appName });
    expect(svg).not.toMatch(/(mask|clip-path)="url\(/);
  });

  it('draws custom emojis from their images and Unicode emoji from Twemoji', async () => {
    const svg = await renderShareSvg({ text: 'Breakfast :toast: 🦆', emojis, appName: 'Quirk Hub' });
    const toast = Buffer.from(emojis.get('toast')!.image).toString('base64');
    expect(svg).toContain(`data:image/png;base64,${toast}`);
    expect(svg).toContain('data:image/svg+xml;base64,');
    expect(svg).not.toContain(':toast:');
    // The text area only: the plate (background and footer) is drawn once per worker.
    expect(svg).toMatch(new RegExp(`^<svg width="${TEXT_AREA.width}" height="${TEXT_AREA.height}"`));
  });

  it('leaves unknown emojis as text and draws WebP ones converted to PNG', async () => {
    const { text, graphemeImages } = await withEmojiGlyphs(':nope: :toast: :wavy:', emojis);
    expect(text).toBe(':nope: \uE000 \uE001');
    expect(Object.keys(graphemeImages)).toEqual(['\uE000', '\uE001']);
    const png = Buffer.from(graphemeImages['\uE001']!.replace(/^data:image\/png;base64,/, ''), 'base64');
    const { width, height, format } = await sharp(png).metadata();
    expect([format, width, height]).toEqual(['png', 128, 128]);
  });

  it('draws a broken WebP emoji as nothing rather than failing the card', async () => {
    const broken = new Map([['bad', { contentType: 'image/webp', image: Buffer.from('RIFF\0\0\0\0WEBPjunk') }]]);
    const { text, graphemeImages } = await withEmojiGlyphs('x :bad:', broken);
    expect(text).toBe('x \uE000');
    expect(graphemeImages['\uE000']).toMatch(/^data:image\/png;base64,/);
  });

  it('picks private-use characters the text does not already contain', async () => {
    const { text, graphemeImages } = await withEmojiGlyphs('\uE000 :toast:', emojis);
    expect(text).toBe('\uE000 \uE001');
    expect(Object.keys(graphemeImages)).toEqual(['\uE001']);
  });
});

describe('fitText', () => {
  it('sets short texts large and long ones small, and fits the longest entry without clamping', async () => {
    const short = await fitText('Socks graduate.');
    const medium = await fitText(PROSE.repeat(4));
    const long = await fitText(longest);
    expect(short.fontSize).toBeGreaterThanOrEqual(80);
    expect(medium.fontSize).toBeLessThan(short.fontSize);
    expect(long.fontSize).toBeLessThan(medium.fontSize);
    expect(long.fontSize).toBeGreaterThanOrEqual(18);
    expect(long.maxLines).toBeUndefined();
  });

  it('keeps line breaks: more lines need a smaller size', async () => {
    const oneLine = await fitText('one two three four five six');
    const sixLines = await fitText('one\ntwo\nthree\nfour\nfive\nsix');
    expect(sixLines.fontSize).toBeLessThan(oneLine.fontSize);
  });

  it('clamps what cannot fit even at the smallest size', async () => {
    const style = await fitText(Array.from({ length: 300 }, (_, i) => `line ${i}`).join('\n'));
    expect(style.maxLines).toBeGreaterThan(5);
    expect(style.maxLines! * style.fontSize * style.lineHeight).toBeLessThanOrEqual(CARD_HEIGHT);
  });
});

describe('scripts', () => {
  it('asks for the faces of the scripts a text uses, in a fixed order, and none for Latin, Greek, Cyrillic or Devanagari', () => {
    expect(textScripts('Plain, Ελληνικά, Русский, हिन्दी').faces).toEqual([]);
    expect(textScripts('שלום and مرحبا and สวัสดี').faces).toEqual(['arabic', 'hebrew', 'thai']);
    expect(textScripts('Hi', 'عربي').faces).toEqual(['arabic']);
  });

  it('picks the CJK locale: kana is Japanese, Hangul Korean, other Han Chinese (Traditional by its characters)', () => {
    expect(textScripts('日本語のテキスト')).toMatchObject({ faces: ['japanese'], lang: 'ja-JP' });
    expect(textScripts('한국어 漢字')).toMatchObject({ faces: ['korean'], lang: 'ko-KR' });
    expect(textScripts('这个问题')).toMatchObject({ faces: ['chinese-simplified'], lang: 'zh-CN' });
    expect(textScripts('這個問題')).toMatchObject({ faces: ['chinese-traditional'], lang: 'zh-TW' });
    expect(textScripts('天地')).toMatchObject({ faces: ['chinese-simplified'], lang: 'zh-CN' });
    expect(textScripts('ㄅㄆㄇ 天地')).toMatchObject({ faces: ['chinese-traditional'], lang: 'zh-TW' });
    expect(textScripts('かな and 한글')).toMatchObject({ faces: ['japanese', 'korean'], lang: 'ja-JP' });
    expect(textScripts('Latin only').lang).toBeUndefined();
  });

  it('runs right to left when the first letter is Arabic or Hebrew', () => {
    expect(textDirection('«مرحبا» hello')).toBe('rtl');
    expect(textDirection('123 שלום')).toBe('rtl');
    expect(textDirection('hello مرحبا')).toBe('ltr');
    expect(textDirection('42 !')).toBe('ltr');
  });

  /** outline is the SVG path satori draws for one character with the fonts and locale of `scripts`. */
  async function outline(character: string, scripts: TextScripts): Promise<string> {
    const node = { type: 'div', props: { lang: scripts.lang, style: { display: 'flex', fontFamily: 'Noto Sans', fontSize: 64 }, children: character } };
    const svg = await satori(node, { width: 200, height: 120, fonts: cardFonts(scripts.faces) });
    return [...svg.matchAll(/ d="([^"]+)"/g)].map((m) => m[1]).join(' ');
  }

  it('draws a real glyph for every character of every sample script, never the missing-glyph box', async () => {
    const texts = ['عربي', 'עברית', '中文简体', '中文繁體', 'にほんご', '한국어', 'हिन्दी', 'ภาษาไทย', 'Русский', 'Ελληνικά'];
    for (const text of texts) {
      const scripts = textScripts(text);
      // U+0378 is unassigned: no font has it, so it is drawn as the missing-glyph box of the same fonts.
      const box = await outline('\u0378', scripts);
      expect(box).not.toBe('');
      for (const character of new Set(text)) {
        const drawn = await outline(character, scripts);
        expect(drawn, `${character} of ${text}`).not.toBe('');
        expect(drawn, `${character} of ${text}`).not.toBe(box);
      }
    }
  });
});

describe('displayText', () => {
  const variables = new Map([
    ['$ANIMAL$', ['goose', 'beaver', 'capybara', 'hedgehog', 'llama', 'penguin']],
    ['$ODD$', ['a $AUTHOR$ value']],
  ]);

  it('replaces the client-side variables with neutral words and the service name', () => {
    expect(displayText('So $AUTHOR$ posted in $CHANNEL$ on $SERVER$ via ${app_name}.', variables, 'u', 'Quirk Hub')).toBe(
      `So ${CLIENT_VARIABLE_WORDS.$AUTHOR$} posted in ${CLIENT_VARIABLE_WORDS.$CHANNEL$} on ${CLIENT_VARIABLE_WORDS.$SERVER$} via Quirk Hub.`,
    );
  });

  it('capitalises a neutral word that starts a sentence, and only that', () => {
    const card = (raw: string) => displayText(raw, variables, 'u', appName);
    expect(card('$AUTHOR$ waved.')).toBe('Someone waved.');
    expect(card('  "$SERVER$ is closed," said $AUTHOR$.')).toBe('  "This server is closed," said someone.');
    expect(card('Hi. $CHANNEL$ wins! $AUTHOR$? $AUTHOR$… $AUTHOR$')).toBe('Hi. This channel wins! Someone? Someone… Someone');
    expect(card('one\n$AUTHOR$\r\n($AUTHOR$ again)')).toBe('one\nSomeone\n(Someone again)');
    expect(card('完了。$AUTHOR$')).toBe('完了。Someone');
    expect(card('3.5 $AUTHOR$ e.g.$AUTHOR$ and $AUTHOR$.')).toBe('3.5 someone e.g.someone and someone.');
    // A word typed in the text or coming out of a server value is left as it is.
    expect(card('someone. $ODD$')).toBe('someone. a $AUTHOR$ value');
  });

  it('picks server values by the UUID: the same entry always reads the same', () => {
    const raw = '$ANIMAL$ $ANIMAL$ $ANIMAL$ $ANIMAL$ $ANIMAL$ $ANIMAL$';
    const a = displayText(raw, variables, '8acee36d-429e-4d93-bea6-f7924f1e6ba5', appName);
    expect(displayText(raw, variables, '8acee36d-429e-4d93-bea6-f7924f1e6ba5', appName)).toBe(a);
    for (const word of a.split(' ')) expect(variables.get('$ANIMAL$')).toContain(word);
    const others = ['c4c7499d-8a06-4e49-9bf4-912aefe677cf', '46e4087a-c7b9-44fa-97d9-fbfd86d62295', 'a25b207a-881d-47cf-b7a9-5f69b624a105'];
    expect(others.some((uuid) => displayText(raw, variables, uuid, appName) !== a)).toBe(true);
  });

  it('substitutes in one pass and normalises line breaks', () => {
    expect(displayText('$ODD$\r\nnext\rlast', variables, 'u', appName)).toBe('a $AUTHOR$ value\nnext\nlast');
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
