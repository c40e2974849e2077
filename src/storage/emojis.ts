/** Custom emojis: the list (names and image hashes) and the images themselves. */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import { recordAction } from './moderation-log.ts';
import { bumpRevision, writeTransaction, type RevisionCache } from './revision.ts';
import { compareCodePoints } from './variables.ts';

export interface EmojiInfo {
  name: string;
  contentType: string;
  sha256: string;
}

export interface EmojiImage extends EmojiInfo {
  image: Uint8Array;
}

export class EmojiStore {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly cache: RevisionCache,
  ) {}

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
      .select(['name', 'content_type', 'sha256', 'image'])
      .where('name', '=', name)
      .executeTakeFirst();
    return row ? { name: row.name, contentType: row.content_type, sha256: row.sha256, image: row.image } : null;
  }

  /** insertMissing adds the emojis whose name does not exist yet; returns how many it added. */
  async insertMissing(emojis: readonly { name: string; contentType: string; image: Uint8Array }[]): Promise<number> {
    const added = await this.db.transaction().execute(async (trx) => {
      let count = 0;
      for (const emoji of emojis) {
        const result = await trx
          .insertInto('emojis')
          .values({
            name: emoji.name,
            content_type: emoji.contentType,
            image: emoji.image,
            sha256: createHash('sha256').update(emoji.image).digest('hex'),
            updated_at: Date.now(),
          })
          .onConflict((oc) => oc.column('name').doNothing())
          .executeTakeFirst();
        count += Number(result.numInsertedOrUpdatedRows ?? 0);
      }
      if (count > 0) await bumpRevision(trx);
      return count;
    });
    if (added > 0) this.cache.invalidate();
    return added;
  }

  /** put creates or replaces an emoji image (already checked); tells which it did. */
  async put(name: string, contentType: string, image: Uint8Array, actor: string): Promise<'created' | 'updated'> {
    const sha256 = createHash('sha256').update(image).digest('hex');
    const outcome = await writeTransaction(this.db, this.cache, async (trx) => {
      const exists = await trx.selectFrom('emojis').select('name').where('name', '=', name).executeTakeFirst();
      const row = { content_type: contentType, image, sha256, updated_at: Date.now() };
      if (exists) await trx.updateTable('emojis').set(row).where('name', '=', name).execute();
      else await trx.insertInto('emojis').values({ name, ...row }).execute();
      await recordAction(trx, actor, 'emoji.put', name, { contentType, bytes: image.byteLength, sha256 });
      return exists ? ('updated' as const) : ('created' as const);
    });
    return outcome!;
  }

  /** remove deletes an emoji; false when there was none. */
  async remove(name: string, actor: string): Promise<boolean> {
    const removed = await writeTransaction(this.db, this.cache, async (trx) => {
      const result = await trx.deleteFrom('emojis').where('name', '=', name).executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) return undefined;
      await recordAction(trx, actor, 'emoji.delete', name);
      return true;
    });
    return removed === true;
  }
}
