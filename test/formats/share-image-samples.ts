/**
 * The sample card of each script (docs/cards/samples.json): the golden images of the share card
 * tests, and the samples docs/share-image.md shows. bench/render-sample-cards.ts draws them.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CustomEmojiImage, ShareCardInput } from '../../src/formats/share-image/render.ts';
import { displayText } from '../../src/domain/display-text.ts';

export interface Sample {
  /** File name in docs/cards/, without `.png`. */
  name: string;
  /** What it shows, for the docs. */
  script: string;
  /** The entry's raw text (client-side variables allowed). */
  text: string;
  /** Demo emojis (demo/emojis/<name>.png) the text uses. */
  emojis?: string[];
}

const root = path.resolve(import.meta.dirname, '../..');

export const CARDS_DIR = path.join(root, 'docs/cards');

export const samples: readonly Sample[] = JSON.parse(fs.readFileSync(path.join(CARDS_DIR, 'samples.json'), 'utf8')) as Sample[];

const SAMPLE_UUID = '5a3b1c2d-0000-4000-8000-00000000c0de';
const APP_NAME = 'Nonsense Entry Service';

/** sampleCardInput is what the card of a sample is drawn from. */
export function sampleCardInput(sample: Sample): ShareCardInput {
  const emojis = new Map<string, CustomEmojiImage>(
    (sample.emojis ?? []).map((name) => [name, { contentType: 'image/png', image: fs.readFileSync(path.join(root, 'demo/emojis', `${name}.png`)) }]),
  );
  return { text: displayText(sample.text, new Map(), SAMPLE_UUID, APP_NAME), emojis, appName: APP_NAME };
}
