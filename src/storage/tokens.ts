/**
 * Admin tokens: 256 random bits, shown once at creation and stored only as a SHA-256 hash. A token
 * is a long random secret, so a fast hash is enough (there is nothing to brute-force); lookups go by
 * the hash, and the final comparison is constant-time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';

const TOKEN_PREFIX = 'nst_';
export const LABEL_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;

function hashOf(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export class TokenStore {
  constructor(private readonly db: Kysely<DB>) {}

  /** create makes a token for `label`, or returns null when an active token has that label. */
  async create(label: string): Promise<string | null> {
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    return this.db.transaction().execute(async (trx) => {
      const active = await trx.selectFrom('tokens').select('id').where('label', '=', label).where('revoked_at', 'is', null).executeTakeFirst();
      if (active) return null;
      await trx.insertInto('tokens').values({ label, hash: hashOf(token), created_at: Date.now(), revoked_at: null }).execute();
      return token;
    });
  }

  /** revoke ends every active token of `label`; returns how many it ended. */
  async revoke(label: string): Promise<number> {
    const result = await this.db
      .updateTable('tokens')
      .set({ revoked_at: Date.now() })
      .where('label', '=', label)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** list returns the labels of active tokens with when they were made. */
  async list(): Promise<{ label: string; created_at: number }[]> {
    const rows = await this.db.selectFrom('tokens').select(['label', 'created_at']).where('revoked_at', 'is', null).orderBy('label').execute();
    return rows.map((r) => ({ label: r.label, created_at: Number(r.created_at) }));
  }

  /** verify returns the label of the active token `token`, or null. */
  async verify(token: string): Promise<string | null> {
    if (!token.startsWith(TOKEN_PREFIX) || token.length > 100) return null;
    const hash = hashOf(token);
    const row = await this.db.selectFrom('tokens').select(['label', 'hash']).where('hash', '=', hash).where('revoked_at', 'is', null).executeTakeFirst();
    if (!row) return null;
    return timingSafeEqual(Buffer.from(row.hash, 'hex'), Buffer.from(hash, 'hex')) ? row.label : null;
  }
}
