/**
 * A database for the consumer tests: about 250 entries, among them texts that break naive XML, JSON
 * or HTML handling (markup, `&`, `]]>`, quotes, emoji, line breaks), texts with a server variable and
 * with a client-side one, and entries sharing a timestamp (so the uuid tie-break shows in paging).
 */
import type { NewEntry } from '../../src/storage/entries.ts';

export const FIXTURE_VARIABLES = [{ name: '$ANIMAL$', description: 'An animal.', values: ['cat', 'goose', 'wombat'] }];

const HOSTILE = [
  '<script>alert("owned")</script> and a sock',
  'Fish & chips & <b>bold</b> claims',
  'A CDATA end ]]> in the middle ]]>',
  `Quotes: "double", 'single', \`back\`, «guillemets»`,
  'Emoji: 🦆🧦 and a family 👨‍👩‍👧 in one line',
  'First line\nsecond line\nthird line',
  'Windows line\r\nbreak and a lone\rreturn',
  '  leading and trailing spaces  ',
  'Tabs\tbetween\twords',
  'Backslashes \\ and a /Date(0)/ lookalike \\/Date(1)\\/',
  'Percent %20 and plus + and ?$filter=x&$top=1 in text',
  "An O'Reilly apostrophe for substringof",
  'Non-BMP 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and combining é',
  'The $ANIMAL$ ate my homework',
  'Ask $AUTHOR$ about the $ANIMAL$ in ${app_name}',
  '$UNKNOWN$ is not a variable',
  '<?xml version="1.0"?><m:error>fake</m:error>',
  '{"d":{"results":[]}} pretends to be JSON',
];

/** consumerEntries builds `count` entries with predictable uuids, the hostile ones spread among them. */
export function consumerEntries(count = 250): NewEntry[] {
  const entries: NewEntry[] = [];
  for (let i = 0; i < count; i++) {
    const hostile = i % 13 === 5 ? HOSTILE[Math.floor(i / 13) % HOSTILE.length] : undefined;
    // Every tenth pair shares a timestamp; the uuid decides their order.
    const timestamp = 1_700_374_812 + (i - (i % 10 === 1 ? 1 : 0)) * 3_607;
    const uuid = `c0ffee${String(i % 7).padStart(2, '0')}-0000-4000-8000-${String(i).padStart(12, '0')}`;
    entries.push({ uuid, timestamp, text: hostile === undefined ? `Plain entry number ${i}: a sock went missing.` : `${hostile} #${i}` });
  }
  return entries;
}
