/**
 * CardCache keeps rendered cards in memory, least recently used out first, within a byte budget
 * (CARD_CACHE_BYTES). Keys cover everything that shapes a card's pixels, so a cached card is never
 * stale: a changed entry, variable value, emoji or service name has another key.
 */
export class CardCache {
  private readonly cards = new Map<string, Buffer>();
  private total = 0;

  constructor(private readonly maxBytes: number) {}

  /** get returns the card for `key` and marks it as recently used, or undefined. */
  get(key: string): Buffer | undefined {
    const png = this.cards.get(key);
    if (png !== undefined) {
      // A Map iterates in insertion order: moving the card to the end makes the first one the oldest.
      this.cards.delete(key);
      this.cards.set(key, png);
    }
    return png;
  }

  /** set keeps a card, dropping the least recently used ones until the budget holds. */
  set(key: string, png: Buffer): void {
    if (png.length > this.maxBytes) return;
    const old = this.cards.get(key);
    if (old !== undefined) {
      this.cards.delete(key);
      this.total -= old.length;
    }
    this.cards.set(key, png);
    this.total += png.length;
    for (const [oldest, card] of this.cards) {
      if (this.total <= this.maxBytes) break;
      this.cards.delete(oldest);
      this.total -= card.length;
    }
  }

  /** The bytes of the cards held. */
  get bytes(): number {
    return this.total;
  }

  /** The number of cards held. */
  get size(): number {
    return this.cards.size;
  }

  /** clear forgets every card. */
  clear(): void {
    this.cards.clear();
    this.total = 0;
  }
}
