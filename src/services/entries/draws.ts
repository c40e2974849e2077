/**
 * The random pick's draws: one of the counted visible entries by the counts per block of ids, then the
 * entry itself within its block. Shared by the event loop (a pick per request) and the read workers
 * (picks drawn ahead of the requests, services/read-workers `drawTask`), so that both are the same
 * uniform pick.
 */
import type { PickIndex } from '../../domain/variables.ts';
import { COUNT_BLOCK, type VisibleBlocks } from '../../storage/entries.ts';

/** A random pick under way: the entry number drawn, its block, and the first id drawn within it. */
export interface Draw {
  readonly block: number;
  /** The drawn entry's place among the block's visible entries. */
  readonly nth: number;
  /** The block's visible entries. */
  readonly visible: number;
  readonly id: number;
}

/** Ids drawn within a block before the drawn entry is found by its place. */
const TRIES_IN_BLOCK = 8;
/** A block with fewer than one visible entry in this many ids is read at once, without drawing ids. */
const SPARSE = 16;

/** drawFrom draws one of the counted entries: its block by the counts, then an id within the block. */
export function drawFrom(blocks: VisibleBlocks, pick: PickIndex): Draw {
  const k = pick(blocks.total);
  const ends = blocks.ends;
  // The first block whose running count passes k.
  let low = 0;
  let high = ends.length - 1;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (ends[middle]! > k) high = middle;
    else low = middle + 1;
  }
  const block = blocks.blocks[low]!;
  const before = low === 0 ? 0 : ends[low - 1]!;
  return { block, nth: k - before, visible: ends[low]! - before, id: block * COUNT_BLOCK + pick(COUNT_BLOCK) };
}

/** How a draw is resolved: reads by id and by place in a block, each the entry, null for none, or undefined when it cannot read now (storage's EntryReadsNow is one). */
export interface DrawReads<T> {
  findById(id: number): T | null | undefined;
  nthInBlock(block: number, n: number): T | null | undefined;
}

/**
 * idsToTry is how many ids are drawn within the block before the drawn entry is read by its place: in
 * a block mostly of hidden or deleted ids, drawing ids would rarely find one, so it is read at once.
 * Rejection within a block stays uniform: every visible id of the block is as likely.
 */
export function idsToTry(draw: Draw): number {
  return draw.visible * SPARSE < COUNT_BLOCK ? 0 : TRIES_IN_BLOCK;
}

/** nextId is the id to try at `attempt` (from 0): the drawn one first, then fresh ones in the block. */
export function nextId(draw: Draw, attempt: number, pick: PickIndex): number {
  return attempt === 0 ? draw.id : draw.block * COUNT_BLOCK + pick(COUNT_BLOCK);
}

/**
 * resolveDraw finds the drawn entry at once: an id drawn within the block that is visible, or after
 * a few misses the entry at the drawn place. Null when the block holds fewer than counted (a change
 * landed between the counts and the read), undefined when a read could not be made now. `from` is
 * the first attempt to make: 1 where the drawn id itself was read already, and missed.
 */
export function resolveDraw<T>(draw: Draw, pick: PickIndex, reads: DrawReads<T>, from = 0): T | null | undefined {
  const tries = idsToTry(draw);
  for (let attempt = from; attempt < tries; attempt++) {
    const found = reads.findById(nextId(draw, attempt, pick));
    if (found !== null) return found;
  }
  return reads.nthInBlock(draw.block, draw.nth);
}
