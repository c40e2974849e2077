/**
 * Golden images: the card of every sample script (docs/cards/samples.json) is compared with its
 * checked-in PNG in docs/cards/, pixel by pixel with a small tolerance (anti-aliasing may differ by
 * a shade between machines; a missing glyph, a wrong font or a mirrored line does not). After a
 * deliberate change of the design, redraw them with `node --import tsx bench/render-sample-cards.ts`
 * and look at each one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { renderShareImage } from '../../src/formats/share-image/render.ts';
import { CARDS_DIR, sampleCardInput, samples } from './share-image-samples.ts';

/** A pixel differs when one of its channels is off by more than this (of 255). */
const CHANNEL_TOLERANCE = 40;
/** At most this share of the pixels may differ. */
const MAX_DIFFERING = 0.002;

async function rgb(png: Buffer): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

describe('share card golden images', () => {
  it('has a sample for every script the cards promise', () => {
    const names = samples.map((s) => s.name);
    for (const name of ['arabic', 'hebrew', 'chinese-simplified', 'chinese-traditional', 'japanese', 'korean', 'devanagari', 'thai', 'cyrillic', 'greek', 'mixed']) {
      expect(names).toContain(name);
    }
  });

  for (const sample of samples) {
    it(`draws ${sample.script} as docs/cards/${sample.name}.png`, async () => {
      const png = await renderShareImage(sampleCardInput(sample));
      const [actual, expected] = await Promise.all([rgb(png), rgb(fs.readFileSync(path.join(CARDS_DIR, `${sample.name}.png`)))]);
      expect([actual.width, actual.height]).toEqual([expected.width, expected.height]);
      let differing = 0;
      for (let i = 0; i < actual.data.length; i += 3) {
        const off = Math.max(
          Math.abs(actual.data[i]! - expected.data[i]!),
          Math.abs(actual.data[i + 1]! - expected.data[i + 1]!),
          Math.abs(actual.data[i + 2]! - expected.data[i + 2]!),
        );
        if (off > CHANNEL_TOLERANCE) differing++;
      }
      const share = differing / (actual.width * actual.height);
      if (share > MAX_DIFFERING) {
        const saved = path.join(os.tmpdir(), `card-${sample.name}.png`);
        fs.writeFileSync(saved, png);
        expect.fail(`${(share * 100).toFixed(2)}% of the pixels differ from docs/cards/${sample.name}.png; this render is in ${saved}`);
      }
    });
  }
});
