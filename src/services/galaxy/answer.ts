/**
 * The galaxy's stored answer: the endpoint's body for a fit, rendered once by the layout computation
 * and stored in the database in chunks, so that a request streams it whatever the galaxy's size.
 *
 * - Stars are in uuid order, CHUNK_STARS to a chunk, one row per chunk and format: CSV records each
 *   preceded by their CRLF, JSON objects each followed by a comma. A chunk knows its first and last
 *   uuid, so the stars changed since the answer was written are found in the chunks that hold them.
 * - An answer reflects an entries revision: every entry changed at or before it is in the answer as
 *   it is (placed, or left out when hidden). Entries changed after it are in the change log; serve.ts
 *   looks them up when it serves the answer (the *overlay*).
 * - It is written again (under a new id, then the old one dropped) when a refit makes a new fit, and
 *   when the overlay grows past REWRITE_AFTER_CHANGES or the change log was pruned past the answer's
 *   revision. The answer before is kept while the next is written, for requests still streaming it.
 */
import { csvRecord, jsonItem, GALAXY_FORMATS } from '../../formats/galaxy.ts';
import type { GalaxyAnswer, GalaxyLayout, GalaxyStore } from '../../storage/galaxy.ts';
import type { Pause } from './layout.ts';

/** Stars per chunk: about 700 KB of CSV and 950 KB of JSON, each read and sent in about a millisecond. */
export const CHUNK_STARS = 8192;
/** Entry changes since the stored answer after which the computation writes it again. */
export const REWRITE_AFTER_CHANGES = 10_000;

/** answerStale tells whether the stored answer of the current layout is to be written (again). */
export async function answerStale(store: GalaxyStore, layout: GalaxyLayout, revision: number): Promise<boolean> {
  const answer = await store.answer(layout.fit);
  if (answer === null) return true;
  if (revision - answer.revision <= REWRITE_AFTER_CHANGES) return answer.revision < (await store.changesFloor());
  // The revision counts every write; the log says how many of them changed entries.
  const changes = await store.countEntryChangesAfter(answer.revision, REWRITE_AFTER_CHANGES + 1);
  return changes > REWRITE_AFTER_CHANGES || answer.revision < (await store.changesFloor());
}

/**
 * writeAnswer renders and stores the answer of `fit` as it is now, reflecting `revision` (the entries
 * revision every star of the fit was placed for), then drops the answers before the previous one.
 */
export async function writeAnswer(store: GalaxyStore, fit: number, revision: number, now: number, pause: Pause, chunkStars = CHUNK_STARS): Promise<GalaxyAnswer> {
  const id = now * 1000 + Math.floor(Math.random() * 1000);
  await store.startAnswer(id, fit, revision, now);
  let seq = 0;
  let stars = 0;
  let page: { uuid: string; csv: string; json: string }[] = [];
  const flush = async () => {
    if (page.length === 0) return;
    const firstUuid = page[0]!.uuid;
    const lastUuid = page.at(-1)!.uuid;
    const rows = GALAXY_FORMATS.map((format) => ({
      format,
      seq,
      firstUuid,
      lastUuid,
      stars: page.length,
      bytes: Buffer.from(page.map((star) => star[format]).join(''), 'latin1'),
    }));
    await store.writeAnswerChunks(id, rows);
    seq++;
    page = [];
    await pause();
  };
  for await (const points of store.pointsByUuid(fit)) {
    for (const point of points) {
      page.push({ uuid: point.uuid, csv: csvRecord(point), json: `${jsonItem(point)},` });
      stars++;
      if (page.length === chunkStars) await flush();
    }
    await pause();
  }
  await flush();
  await store.completeAnswer(id, stars, seq);
  // Requests may still stream the answer before this one: it goes with the next.
  const previous = (await store.answerIds()).filter((answer) => answer.complete && answer.id !== id)[0];
  await store.dropAnswersBut(previous === undefined ? [id] : [id, previous.id]);
  return { id, fit, revision, stars, chunks: seq };
}
