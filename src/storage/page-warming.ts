/**
 * The pages a write is about to touch, read first away from the event loop (SQLite: by a read
 * worker, services/read-workers `warm`), so that the write, run on the event loop's connection, finds
 * them in the kernel's page cache instead of waiting for the disk: on a file larger than the memory
 * that caches it, one hide held every request for tens of milliseconds, nearly all of it reads of
 * cold pages. A hint only: the write is the same without it, and a warmer that fails or is slow is
 * not waited for past WARM_WAIT_MS. The entries' writes and a report's filing use it.
 */

/**
 * What a write is about to touch: the entry by its uuid (its row, its places in the state index, its
 * block's count) and the text key looked up for a duplicate.
 */
export interface WriteKeys {
  uuid?: string;
  textKey?: string;
}

/** PageWarmer reads the pages of `keys` away from the event loop. */
export type PageWarmer = (keys: WriteKeys) => Promise<unknown>;

/** How long a write waits for its pages to be warmed before it goes on regardless. */
const WARM_WAIT_MS = 250;

/** PageWarming is the storage's one warmer, shared by the stores that write; none until one is given. */
export class PageWarming {
  private warmer: PageWarmer | undefined;

  /** use has the writes warm their pages with `warmer` first; undefined stops it. */
  use(warmer: PageWarmer | undefined): void {
    this.warmer = warmer;
  }

  /** before waits for `keys`' pages to be warmed, at most WARM_WAIT_MS; a failure is no matter. */
  async before(keys: WriteKeys): Promise<void> {
    if (this.warmer === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, WARM_WAIT_MS)));
    try {
      await Promise.race([this.warmer(keys).catch(() => {}), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
