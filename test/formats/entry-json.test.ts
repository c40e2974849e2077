/**
 * The prepared JSON of an entry (formats/entry.ts) is what the response schema's serialiser makes of
 * `deliverEntry`, byte for byte, with the same picks for the server variables.
 */
import fc from 'fast-check';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededPick, type ServerVariables } from '../../src/domain/variables.ts';
import { deliverEntry } from '../../src/domain/delivered-entry.ts';
import { EntryJsonTemplate, entryJsonEncoder } from '../../src/formats/entry.ts';
import { Entry } from '../../src/schemas/api.ts';
import type { EntryRecord } from '../../src/domain/records.ts';

const variables: ServerVariables = new Map<string, string[]>([
  ['$ANIMAL$', ['cat', 'goose', 'quoted "newt"', 'back\\slash', 'ünïcödé 🦆']],
  ['${colour}', ['red', '']],
  ['$FOOD$', ['$ANIMAL$ pie']],
]);

/** The schema's serialisation, as a route with this response schema sends it. */
const app = Fastify();
let serialised: (entry: EntryRecord, seed: string) => Promise<string>;

beforeAll(async () => {
  app.post('/', { schema: { response: { 200: Entry } } }, async (request) => {
    const { entry, seed } = request.body as { entry: EntryRecord; seed: string };
    return deliverEntry(entry, variables, seededPick(seed));
  });
  await app.ready();
  serialised = async (entry, seed) => (await app.inject({ method: 'POST', url: '/', payload: { entry, seed } })).body;
});
afterAll(() => app.close());

function prepared(entry: EntryRecord, seed: string): string {
  const encoded = entryJsonEncoder(variables)(entry);
  return typeof encoded === 'string' ? encoded : encoded.render(seededPick(seed));
}

const uuid = '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11';

describe('entryJsonEncoder', () => {
  it('gives the serialiser’s bytes for plain texts, variables of both kinds and awkward characters', async () => {
    const texts = [
      'A plain entry about socks.',
      'The $ANIMAL$ ate the $ANIMAL$ in ${colour}.',
      '$AUTHOR$ wins a $NOTAVAR$.',
      '$FOOD$ for ${app_name}',
      'Quotes " and \\ backslashes, a tab\tand\nnew lines\r\n',
      'Emoji 🦆, accents é, CJK 漢字, RTL שלום, a lone \ud800 surrogate',
      '$ANIMAL$',
      '$$ANIMAL$$ $ANIMAL$ANIMAL$ ${colour}${colour}',
      '</script><!-- \u2028 \u2029',
    ];
    for (const [i, text] of texts.entries()) {
      const entry = { uuid, text, timestamp: 1_700_000_000 + i };
      for (const seed of ['a', 'b', 'c']) expect(prepared(entry, seed)).toBe(await serialised(entry, seed));
    }
  });

  it('prepares texts without server variables whole and the others as templates', () => {
    const encode = entryJsonEncoder(variables);
    expect(typeof encode({ uuid, text: '$AUTHOR$ only', timestamp: 1 })).toBe('string');
    expect(encode({ uuid, text: 'a $ANIMAL$', timestamp: 1 })).toBeInstanceOf(EntryJsonTemplate);
  });

  it('marks a template ASCII when every rendering is, so that its length is its length in bytes', () => {
    const encode = (text: string) => entryJsonEncoder(variables)({ uuid, text, timestamp: 1 }) as EntryJsonTemplate;
    expect(encode('The ${colour} sock').ascii).toBe(true);
    // One of the values is not ASCII, even if a rendering picks another.
    expect(encode('The $ANIMAL$ sock').ascii).toBe(false);
    expect(encode('The ${colour} café').ascii).toBe(false);
    const token = fc.constantFrom('${colour}', '$ANIMAL$', '"', '\\', '\u0000', 'é', '🦆');
    const text = fc.array(fc.oneof(fc.string({ maxLength: 6 }), token), { minLength: 1, maxLength: 8 }).map((parts) => `\${colour} ${parts.join('')}`);
    fc.assert(
      fc.property(text, fc.string({ maxLength: 4 }), (raw, seed) => {
        const template = encode(raw);
        const rendered = template.render(seededPick(seed));
        if (template.ascii) expect(Buffer.byteLength(rendered)).toBe(rendered.length);
        expect(template.ascii).toBe(/^[\x00-\x7f]*$/.test(JSON.stringify(template.parts)));
      }),
      { numRuns: 300, seed: 18 },
    );
  });

  it('agrees with the serialiser on arbitrary texts', async () => {
    const token = fc.constantFrom('$ANIMAL$', '${colour}', '$FOOD$', '$AUTHOR$', '$NOPE$', '$', '${', '"', '\\', '\n', '\u0000', '🦆');
    const text = fc.array(fc.oneof(fc.string({ maxLength: 8 }), token), { minLength: 1, maxLength: 12 }).map((parts) => parts.join(''));
    await fc.assert(
      fc.asyncProperty(text, fc.integer({ min: 0, max: 4_000_000_000 }), fc.string({ maxLength: 4 }), async (raw, timestamp, seed) => {
        const entry = { uuid, text: raw, timestamp };
        expect(prepared(entry, seed)).toBe(await serialised(entry, seed));
      }),
      { numRuns: 300, seed: 18 },
    );
  });
});
