/** Custom emojis: the list (names and image hashes) and the images themselves. */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import { NamedRows, type NamedRow } from './named-rows.ts';
import type { RevisionCache } from './revision.ts';
import { compareCodePoints } from './variables.ts';

export interface EmojiInfo {
  name: string;
  contentType: string;
  sha256: string;
}

export interface EmojiImage extends EmojiInfo {
  image: Uint8Array;
  /** When the image was stored (Unix ms): its modification time, as nothing else changes it. */
  updatedAt: number;
}

export class EmojiStore extends NamedRows<'emojis'> {
  constructor(db: Kysely<DB>, cache: RevisionCache) {
    super(db, cache, 'emojis', 'emoji');
  }

  /** list returns every emoji (without its image), sorted by name. */
  async list(): Promise<readonly EmojiInfo[]> {
    return this.cache.get('emojis', async () => {
      const rows = await this.db.selectFrom('emojis').select(['name', 'content_type', 'sha256']).execute();
      return rows
        .map((row) => ({ name: row.name, contentType: row.content_type, sha256: row.sha256 }))
        .sort((a, b) => compareCodePoints(a.name, b.name));
    });
  }

  /** find returns the emoji with its image, or null. */
  async find(name: string): Promise<EmojiImage | null> {
    const row = await this.db
      .selectFrom('emojis')
      .select(['name', 'content_type', 'sha256', 'image', 'updated_at'])
      .where('name', '=', name)
      .executeTakeFirst();
    return row ? { name: row.name, contentType: row.content_type, sha256: row.sha256, image: row.image, updatedAt: Number(row.updated_at) } : null;
  }

  /** insertMissing adds the emojis whose name does not exist yet; returns how many it added. */
  insertMissing(emojis: readonly { name: string; contentType: string; image: Uint8Array }[]): Promise<number> {
    return this.insertMissingRows(emojis.map((emoji) => ({ name: emoji.name, ...imageRow(emoji.contentType, emoji.image) })));
  }

  /** put creates or replaces an emoji image (already checked); tells which it did. */
  put(name: string, contentType: string, image: Uint8Array, actor: string): Promise<'created' | 'updated'> {
    const row = imageRow(contentType, image);
    return this.putRow(name, row, actor, { contentType, bytes: image.byteLength, sha256: row.sha256 });
  }
}

function imageRow(contentType: string, image: Uint8Array): NamedRow<'emojis'> {
  return { content_type: contentType, image, sha256: createHash('sha256').update(image).digest('hex'), updated_at: Date.now() };
}
