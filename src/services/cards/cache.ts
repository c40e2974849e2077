import { BudgetedLru } from '../../lib/budgeted-lru.ts';

/**
 * CardCache keeps rendered cards in memory, least recently used out first, within a byte budget
 * (CARD_CACHE_BYTES). Keys cover everything that shapes a card's pixels, so a cached card is never
 * stale: a changed entry, variable value, emoji or service name has another key.
 */
export class CardCache extends BudgetedLru<string, Buffer> {
  constructor(maxBytes: number) {
    super(maxBytes, (png) => png.length);
  }
}
