/**
 * What a card draws at most: the text cut before layout (never inside a grapheme or an emoji token),
 * and emoji images decoded only within the pixel budgets.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { CARD_EMOJI_PIXELS, CARD_MAX_CHARACTERS, cutCardText, declaredPixels, EMOJI_MAX_PIXELS, EMOJI_SCALED_SIDE } from '../../src/formats/share-image/limits.ts';
import { renderShareImage, withEmojiGlyphs, type CustomEmojiImage } from '../../src/formats/share-image/render.ts';
import { pngDeclaring } from '../png.ts';

const codePoints = (text: string) => [...text].length;

const solidPng = async (side: number): Promise<CustomEmojiImage> => ({
  contentType: 'image/png',
  image: await sharp({ create: { width: side, height: side, channels: 4, background: { r: 240, g: 160, b: 40, alpha: 1 } } }).png().toBuffer(),
});

describe('cutCardText', () => {
  it('keeps a text of at most CARD_MAX_CHARACTERS as it is', () => {
    const text = 'é'.repeat(CARD_MAX_CHARACTERS);
    expect(cutCardText(text)).toBe(text);
    expect(cutCardText('Short.')).toBe('Short.');
  });

  it('cuts a longer text to CARD_MAX_CHARACTERS code points and an ellipsis', () => {
    const words = 'The committee of geese met at dawn. '.repeat(2000);
    const cut = cutCardText(words);
    expect(cut.endsWith('…')).toBe(true);
    expect(codePoints(cut)).toBeLessThanOrEqual(CARD_MAX_CHARACTERS + 1);
    expect(codePoints(cut)).toBeGreaterThan(CARD_MAX_CHARACTERS - 2);
    expect(words.startsWith(cut.slice(0, -1))).toBe(true);
  });

  it('never splits a surrogate pair or a grapheme', () => {
    // 😀 is one code point of two UTF-16 units; the cut falls after 2,000 of them.
    const faces = cutCardText('😀'.repeat(3000));
    expect(faces.isWellFormed()).toBe(true);
    expect(faces).toBe(`${'😀'.repeat(CARD_MAX_CHARACTERS)}…`);
    // A family is one grapheme of five code points (three people joined by two ZWJ): 2,000 is 400 of them.
    const family = '👨‍👩‍👧';
    expect(cutCardText(family.repeat(1000))).toBe(`${family.repeat(400)}…`);
    // One character after 1,999: the family does not fit, and is left out whole.
    expect(cutCardText(`${'x'.repeat(1999)}${family}${'y'.repeat(10)}`)).toBe(`${'x'.repeat(1999)}…`);
    // A letter with a combining mark stays together.
    expect(cutCardText(`${'x'.repeat(1999)}e\u0301${'y'.repeat(10)}`)).toBe(`${'x'.repeat(1999)}…`);
  });

  it('never splits an emoji token', async () => {
    const toast = await solidPng(16);
    const emojis = new Map([['toast', toast]]);
    // The token would straddle the limit: it is left out whole.
    const straddling = `${'x'.repeat(1997)}:toast: and more`;
    const cut = await withEmojiGlyphs(straddling, emojis);
    expect(cut.shown).toBe(`${'x'.repeat(1997)}…`);
    expect(cut.text).toBe(cut.shown);
    expect(cut.graphemeImages).toEqual({});
    // Ending exactly at the limit, it is kept and drawn.
    const fits = await withEmojiGlyphs(`${'x'.repeat(1993)}:toast: and more`, emojis);
    expect(fits.shown).toBe(`${'x'.repeat(1993)}:toast:…`);
    expect(fits.text).toBe(`${'x'.repeat(1993)}\uE000…`);
    expect(Object.keys(fits.graphemeImages)).toEqual(['\uE000']);
  });

  it('bounds what a text of 66,600 characters (server variables expanded) sends to the layout', async () => {
    const expanded = 'value 1 of a long variable with plenty of words to fill a card '.repeat(1100).slice(0, 66_600);
    const { text, shown } = await withEmojiGlyphs(expanded, new Map());
    expect(codePoints(text)).toBeLessThanOrEqual(CARD_MAX_CHARACTERS + 1);
    expect(shown).toBe(text);
  });
});

describe('emoji pixel budgets', () => {
  it('reads declared dimensions without decoding, and nothing from what is not an image', () => {
    expect(declaredPixels(pngDeclaring(60_000))).toBe(3_600_000_000);
    expect(declaredPixels(Buffer.from('not an image'))).toBeNull();
  });

  it('draws an emoji declaring more than EMOJI_MAX_PIXELS as its :name: text, without decoding it', async () => {
    const huge = { contentType: 'image/png', image: pngDeclaring(60_000) };
    const { text, graphemeImages } = await withEmojiGlyphs('A :huge: emoji.', new Map([['huge', huge]]));
    expect(text).toBe('A :huge: emoji.');
    expect(graphemeImages).toEqual({});
    // A real image just over the budget (it compresses to a few kilobytes): the card is the card of the text alone.
    const over = await solidPng(Math.ceil(Math.sqrt(EMOJI_MAX_PIXELS)) + 1);
    const input = { text: 'A :over: emoji.', appName: 'Test' };
    const drawn = await renderShareImage({ ...input, emojis: new Map([['over', over]]) });
    expect(drawn.equals(await renderShareImage({ ...input, emojis: new Map() }))).toBe(true);
  });

  it('draws the emojis of a card from scaled copies when together they would decode more than CARD_EMOJI_PIXELS', async () => {
    const big = await solidPng(1024);
    const emojis = new Map([['big', big]]);
    const within = Math.floor(CARD_EMOJI_PIXELS / (1024 * 1024));
    const kept = await withEmojiGlyphs(':big: '.repeat(within), emojis);
    expect(kept.graphemeImages['\uE000']).toBe(`data:image/png;base64,${Buffer.from(big.image).toString('base64')}`);
    const scaled = await withEmojiGlyphs(':big: '.repeat(within + 1), emojis);
    const png = Buffer.from(scaled.graphemeImages['\uE000']!.replace(/^data:image\/png;base64,/, ''), 'base64');
    const { width, height } = await sharp(png).metadata();
    expect([width, height]).toEqual([EMOJI_SCALED_SIDE, EMOJI_SCALED_SIDE]);
  });
});
