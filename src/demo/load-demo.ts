/**
 * The bundled demo data (folder `demo/` at the project root): entries in the service's own JSON
 * export format, server variables, and emoji images. Loading is idempotent: what exists is kept.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EMOJI_NAME_SOURCE, sniffImageType } from '../domain/emojis.ts';
import { checkEntryText } from '../domain/text.ts';
import { parseUuid } from '../domain/uuid.ts';
import { isVariableName } from '../domain/variables.ts';
import type { NewEntry } from '../storage/entries.ts';
import type { Storage } from '../storage/index.ts';
import type { ServerVariable } from '../storage/variables.ts';

const DEMO_EMOJI_FILE = new RegExp(`^${EMOJI_NAME_SOURCE}\\.(png|gif|webp)$`);

export const DEMO_DIR = fileURLToPath(new URL('../../demo/', import.meta.url));

export interface DemoResult {
  entriesAdded: number;
  entriesSkipped: number;
  variablesAdded: number;
  emojisAdded: number;
}

/** loadDemo adds the demo variables, emojis and entries that are not in the database yet. */
export async function loadDemo(storage: Storage, dir: string = DEMO_DIR): Promise<DemoResult> {
  const variables = parseVariables(JSON.parse(await fs.readFile(path.join(dir, 'variables.json'), 'utf8')));
  const entries = parseEntries(JSON.parse(await fs.readFile(path.join(dir, 'entries.json'), 'utf8')));
  const emojis = await readEmojis(path.join(dir, 'emojis'));

  const variablesAdded = await storage.variables.insertMissing(variables);
  const emojisAdded = await storage.emojis.insertMissing(emojis);
  const { added, skipped } = await storage.entries.insertEntries(entries);
  return { entriesAdded: added, entriesSkipped: skipped, variablesAdded, emojisAdded };
}

function parseVariables(data: unknown): ServerVariable[] {
  if (!Array.isArray(data)) throw new Error('demo/variables.json must hold an array');
  return data.map((item, index) => {
    const { name, description, values } = item as Record<string, unknown>;
    const ok =
      typeof name === 'string' && isVariableName(name) && typeof description === 'string' &&
      Array.isArray(values) && values.length > 0 && values.every((v) => typeof v === 'string' && !/[\r\n]/.test(v));
    if (!ok) throw new Error(`demo/variables.json item ${index + 1} is not a valid variable`);
    return { name, description, values: values as string[] };
  });
}

function parseEntries(data: unknown): NewEntry[] {
  if (!Array.isArray(data)) throw new Error('demo/entries.json must hold an array');
  return data.map((item, index) => {
    const { uuid, nonsense, timestamp } = item as Record<string, unknown>;
    const id = typeof uuid === 'string' ? parseUuid(uuid) : null;
    const text = typeof nonsense === 'string' ? checkEntryText(nonsense) : null;
    if (id === null || text === null || !text.ok || !Number.isSafeInteger(timestamp) || (timestamp as number) < 0) {
      throw new Error(`demo/entries.json item ${index + 1} is not a valid entry`);
    }
    return { uuid: id, text: text.text, timestamp: timestamp as number };
  });
}

async function readEmojis(dir: string) {
  const files = (await fs.readdir(dir)).filter((f) => DEMO_EMOJI_FILE.test(f)).sort();
  return Promise.all(
    files.map(async (file) => {
      const image = new Uint8Array(await fs.readFile(path.join(dir, file)));
      const contentType = sniffImageType(image);
      if (contentType === null) throw new Error(`demo/emojis/${file} is not a PNG, GIF or WebP image`);
      return { name: file.replace(/\.\w+$/, ''), contentType, image };
    }),
  );
}
