/**
 * A backup is trusted no more than a request: `nonsense restore` holds every record to the rules the
 * admin API applies to the same data, refuses the first that fails with its line, kind and key, and
 * writes nothing then; texts are stored as the API stores them, trimmed. The files are written by hand
 * here, one record of each kind, and changed one field at a time.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LINE_BYTES, RestoreError, restoreBackup } from '../../src/backup/restore.ts';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase, type Database } from '../../src/db/database.ts';
import { MIGRATIONS } from '../../src/db/migrations/index.ts';
import { DEMO_DIR } from '../../src/demo/load-demo.ts';
import { freshDatabaseUrl, tempDir } from '../helper.ts';
import { pngDeclaring } from '../png.ts';

type Fields = Record<string, unknown>;

const ENTRY = '11111111-1111-4111-8111-111111111111';
const REPORT = '22222222-2222-4222-8222-222222222222';
const TOAST = fs.readFileSync(path.join(DEMO_DIR, 'emojis', 'toast.png'));

function emoji(name: string, image: Buffer, contentType = 'image/png'): Fields {
  return { type: 'emoji', name, content_type: contentType, image: image.toString('base64'), sha256: createHash('sha256').update(image).digest('hex'), updated_at: 1_750_000_000_000 };
}

/** records is one valid record of each kind, in file order (lines 2 to 7). */
function records(): Fields[] {
  return [
    { type: 'variable', name: '$COLOUR$', description: 'A colour', values: ['teal', 'mauve'], updated_at: 1_750_000_000_000 },
    emoji('toast', TOAST),
    { type: 'entry', id: 1, uuid: ENTRY, text: 'A goose in a $COLOUR$ hat.', state: 'visible', created_at: 1_700_000_000, updated_at: 1_700_000_000_000 },
    { type: 'report', id: REPORT, entry_uuid: ENTRY, reason: 'duplicate', details: null, status: 'open', created_at: 1_750_000_000_000, resolved_at: null, resolved_by: null },
    { type: 'token', id: 1, label: 'alice', hash: 'a'.repeat(64), created_at: 1_750_000_000_000, revoked_at: null },
    { type: 'log', id: 1, at: 1_750_000_000_000, actor: 'alice', action: 'entry.create', target: ENTRY, details: JSON.stringify({ text: 'A goose in a $COLOUR$ hat.' }) },
  ];
}

/** backupText writes records as a complete backup file: header, records, end record. */
function backupText(list: Fields[]): string {
  const counts: Record<string, number> = { variable: 0, emoji: 0, entry: 0, report: 0, token: 0, log: 0 };
  for (const record of list) counts[record.type as string]!++;
  const header = { type: 'header', format: 'nonsense-backup', version: 1, created: 1_750_000_000, engine: 'sqlite', migrations: Object.keys(MIGRATIONS), revision: 7, counts };
  return [header, ...list, { type: 'end', counts }].map((record) => `${JSON.stringify(record)}\n`).join('');
}

/** changed is the valid records with the record of `type` changed by `change`. */
function changed(type: string, change: (record: Fields) => void): Fields[] {
  const list = records();
  change(list.find((record) => record.type === type)!);
  return list;
}

describe('restore checks every record as the admin API would', () => {
  let dir: string;
  let drop: () => Promise<void>;
  let database: Database;

  beforeAll(async () => {
    dir = tempDir();
    const target = await freshDatabaseUrl(dir);
    drop = target.drop;
    database = await openDatabase(loadConfig({ DATABASE_URL: target.url, LOG_LEVEL: 'silent' }).database);
    await migrate(database);
  });
  afterAll(async () => {
    await database.close();
    await drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function rowCount(): Promise<number> {
    let total = 0;
    for (const table of ['entries', 'variables', 'emojis', 'reports', 'tokens', 'moderation_log'] as const) {
      const { count } = await database.db.selectFrom(table).select((eb) => eb.fn.countAll<number | string>().as('count')).executeTakeFirstOrThrow();
      total += Number(count);
    }
    return total;
  }

  async function refused(name: string, content: string): Promise<string> {
    const file = path.join(dir, name);
    fs.writeFileSync(file, content);
    const error = await restoreBackup(database, file).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error, name).toBeInstanceOf(RestoreError);
    expect(await rowCount(), name).toBe(0);
    return (error as Error).message;
  }

  it('refuses an emoji whose PNG header declares 60,000×60,000 pixels, before decoding it', async () => {
    const huge = pngDeclaring(60_000, 60_000);
    expect(huge.length).toBeLessThan(10_000);
    const list = records();
    list.splice(1, 0, emoji('huge', huge));
    expect(await refused('huge.jsonl', backupText(list))).toMatch(
      /huge\.jsonl line 3: the image of the emoji huge is a image\/png image of 60000×60000 pixels; emojis must be 1 to 1024 pixels on each side$/,
    );
    // The same rule at the edge: 1,025 pixels on one side.
    expect(await refused('wide.jsonl', backupText(changed('emoji', (e) => Object.assign(e, emoji('toast', pngDeclaring(1025, 1))))))).toMatch(
      /line 3: the image of the emoji toast is a image\/png image of 1025×1 pixels/,
    );
  });

  it('refuses an emoji image that is not what its record says, or larger than an upload may be', async () => {
    expect(await refused('gif.jsonl', backupText(changed('emoji', (e) => Object.assign(e, emoji('toast', TOAST, 'image/gif')))))).toMatch(
      /line 3: the image of the emoji toast is a image\/png image, but its "content_type" says image\/gif$/,
    );
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>');
    expect(await refused('svg.jsonl', backupText(changed('emoji', (e) => Object.assign(e, emoji('toast', svg)))))).toMatch(/line 3: the image of the emoji toast is not a PNG, GIF or WebP image$/);
    const padded = Buffer.concat([TOAST, Buffer.alloc(256 * 1024)]);
    expect(await refused('big.jsonl', backupText(changed('emoji', (e) => Object.assign(e, emoji('toast', padded)))))).toMatch(/line 3: the emoji toast has no valid "image"/);
  });

  it.each([
    ['2^53-1', Number.MAX_SAFE_INTEGER],
    ['2^31', 2 ** 31],
  ])('refuses an entry id of %s, beyond the id columns of PostgreSQL', async (_, id) => {
    expect(await refused('id.jsonl', backupText(changed('entry', (e) => (e.id = id))))).toMatch(new RegExp(`line 4: the entry ${ENTRY} has no valid "id" \\(got ${id}\\)$`));
  });

  it('refuses log details that are not the JSON text of an object', async () => {
    expect(await refused('log.jsonl', backupText(changed('log', (l) => (l.details = 'not json {'))))).toMatch(/line 7: the log record 1 has no valid "details": it is not the JSON text of an object$/);
    expect(await refused('log-array.jsonl', backupText(changed('log', (l) => (l.details = '[1,2]'))))).toMatch(/line 7: the log record 1 has no valid "details"/);
  });

  it.each([
    ['a line break', 'teal\nmauve', /values\[0\]": it must be a single line without control characters$/],
    ['BEL', 'te\u0007al', /values\[0\]": it must be a single line without control characters$/],
    ['NUL', 'te\u0000al', /values\[0\]": it must be a single line without control characters$/],
    ['10,000 characters', 'x'.repeat(10_000), /is not acceptable: the field "values\[0\]" has 10000 characters; at most 200 are allowed$/],
  ])('refuses a variable value with %s', async (_, value, message) => {
    const text = await refused('variable.jsonl', backupText(changed('variable', (v) => (v.values = [value]))));
    expect(text).toMatch(/line 2: the variable \$COLOUR\$ /);
    expect(text).toMatch(message);
  });

  it('refuses what the variable route refuses besides: a client-side name, a multi-line description, no values', async () => {
    expect(await refused('client.jsonl', backupText(changed('variable', (v) => (v.name = '$AUTHOR$'))))).toMatch(/line 2: the variable has no valid "name": \$AUTHOR\$ is a client-side variable/);
    expect(await refused('description.jsonl', backupText(changed('variable', (v) => (v.description = 'A\ncolour'))))).toMatch(/line 2: the variable \$COLOUR\$ has no valid "description"/);
    expect(await refused('no-values.jsonl', backupText(changed('variable', (v) => (v.values = []))))).toMatch(/line 2: the variable \$COLOUR\$ is not acceptable: the field "values"/);
  });

  it('refuses a report reason that is not one of the six, and details with control characters', async () => {
    expect(await refused('reason.jsonl', backupText(changed('report', (r) => (r.reason = 'spam'))))).toMatch(
      new RegExp(`line 5: the report ${REPORT} has no valid "reason": it must be one of: hate_speech, sexual_content, graphic_violence, personal_information, duplicate, other; got "spam"$`),
    );
    expect(await refused('details.jsonl', backupText(changed('report', (r) => (r.details = 'bell \u0007'))))).toMatch(new RegExp(`line 5: the report ${REPORT} has no valid "details"`));
  });

  it('refuses entry texts the admin API refuses, naming the entry', async () => {
    expect(await refused('text.jsonl', backupText(changed('entry', (e) => (e.text = ' '.repeat(5)))))).toMatch(new RegExp(`line 4: the entry ${ENTRY} has no valid "text": the text is empty$`));
    expect(await refused('long.jsonl', backupText(changed('entry', (e) => (e.text = 'y'.repeat(2001)))))).toMatch(/has no valid "text": the text has 2001 characters; at most 2000 are allowed$/);
  });

  it('refuses a line longer than a backup line can be, naming it', async () => {
    const text = backupText(records()).split('\n');
    text.splice(3, 0, 'x'.repeat(MAX_LINE_BYTES + 1));
    expect(await refused('long-line.jsonl', text.join('\n'))).toMatch(/long-line\.jsonl line 4: the line is longer than 4,194,304 bytes/);
  });

  it('stores texts trimmed, as the admin API does, and restores the rest as it was', async () => {
    const list = records();
    const [variable, , entry, report] = list;
    variable!.description = '  A colour ';
    variable!.values = ['  teal', 'mauve  '];
    entry!.text = '\n  A goose in a $COLOUR$ hat.  \n';
    report!.details = '  Seen it twice.\n';
    const file = path.join(dir, 'untrimmed.jsonl');
    fs.writeFileSync(file, backupText(list));
    const result = await restoreBackup(database, file);
    expect(result.counts).toEqual({ variable: 1, emoji: 1, entry: 1, report: 1, token: 1, log: 1 });
    const db = database.db;
    expect(await db.selectFrom('variables').select(['description', 'values_json']).executeTakeFirstOrThrow()).toEqual({ description: 'A colour', values_json: '["teal","mauve"]' });
    expect((await db.selectFrom('entries').select('text').executeTakeFirstOrThrow()).text).toBe('A goose in a $COLOUR$ hat.');
    expect((await db.selectFrom('reports').select('details').executeTakeFirstOrThrow()).details).toBe('Seen it twice.');
    expect(Buffer.from((await db.selectFrom('emojis').select('image').executeTakeFirstOrThrow()).image).equals(TOAST)).toBe(true);
  });
});
