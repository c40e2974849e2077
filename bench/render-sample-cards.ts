/**
 * Renders the sample share cards into docs/cards/ (or the folder given as the first argument) and
 * prints how long each render took: three cards of the bundled demo data (short, long, emojis) and
 * one card per script from docs/cards/samples.json. The script samples are also the golden images of
 * test/formats/share-image-golden.test.ts: regenerate them when the design changes on purpose, and
 * look at every one before committing.
 *
 *   node --import tsx bench/render-sample-cards.ts [folder]
 */
import fs from 'node:fs';
import path from 'node:path';
import { renderShareImage, type CustomEmojiImage } from '../src/formats/share-image/render.ts';
import { displayText } from '../src/domain/display-text.ts';
import { sampleCardInput, samples } from '../test/formats/share-image-samples.ts';

const root = path.resolve(import.meta.dirname, '..');
const out = path.resolve(process.argv[2] ?? path.join(root, 'docs/cards'));
const appName = 'Nonsense Entry Service';

const entries = JSON.parse(fs.readFileSync(path.join(root, 'demo/entries.json'), 'utf8')) as { uuid: string; nonsense: string }[];
const variables = new Map(
  (JSON.parse(fs.readFileSync(path.join(root, 'demo/variables.json'), 'utf8')) as { name: string; values: string[] }[]).map((v) => [v.name, v.values]),
);
const emojis = new Map<string, CustomEmojiImage>(
  fs
    .readdirSync(path.join(root, 'demo/emojis'))
    .filter((file) => file.endsWith('.png'))
    .map((file) => [path.basename(file, '.png'), { contentType: 'image/png', image: fs.readFileSync(path.join(root, 'demo/emojis', file)) }]),
);

const byUuid = (uuid: string) => {
  const found = entries.find((e) => e.uuid === uuid);
  if (!found) throw new Error(`the demo data has no entry ${uuid}`);
  return found;
};
const longest = () => entries.reduce((a, b) => (b.nonsense.length > a.nonsense.length ? b : a));

const demoSamples = [
  { name: 'short', uuid: '46e4087a-c7b9-44fa-97d9-fbfd86d62295' },
  { name: 'long', uuid: longest().uuid },
  { name: 'emojis', uuid: entries.find((e) => e.nonsense.startsWith(':blobcat: :ghosty: :rubberduck:'))!.uuid },
].map(({ name, uuid }) => {
  const entry = byUuid(uuid);
  return { name, input: { text: displayText(entry.nonsense, variables, entry.uuid, appName), emojis, appName } };
});

fs.mkdirSync(out, { recursive: true });
const WARM_RUNS = 5;
for (const { name, input } of [...demoSamples, ...samples.map((sample) => ({ name: sample.name, input: sampleCardInput(sample) }))]) {
  const times: number[] = [];
  let png: Buffer | undefined;
  // The first render of a script is cold (its fonts read and parsed); the rest are warm.
  for (let run = 0; run <= WARM_RUNS; run++) {
    const started = performance.now();
    png = await renderShareImage(input);
    times.push(performance.now() - started);
  }
  const [first, ...warm] = times;
  warm.sort((a, b) => a - b);
  fs.writeFileSync(path.join(out, `${name}.png`), png!);
  console.log(
    `${`${name}.png`.padEnd(28)} ${String([...input.text].length).padStart(4)} chars  ${(png!.length / 1024).toFixed(0).padStart(3)} KiB  ` +
      `first ${first!.toFixed(0).padStart(4)} ms  warm median ${warm[warm.length >> 1]!.toFixed(0).padStart(3)} ms`,
  );
}
