/**
 * The task a render worker runs: one share card, from its text, emoji images and service name to PNG
 * bytes. Fonts, Twemoji drawings and the background are loaded inside the worker, on first use, and
 * stay for the worker's life (see fonts.ts for what a text loads).
 */
import { loadedFonts } from '../../formats/share-image/fonts.ts';
import { RenderCancelled, renderShareImage, type ShareCardInput } from '../../formats/share-image/render.ts';

export interface RenderTask extends ShareCardInput {
  /**
   * Two Int32 shared with the main thread: [0] is set to 1 by the main thread when nobody waits for
   * the card any more; [1] is set to 1 here when the render starts, from when its time limit counts.
   */
  cancel: Int32Array;
}

/** What a task answers: the PNG, or that it stopped because it was cancelled. */
export type RenderResult = { png: Uint8Array } | { cancelled: true };

/** render draws one card; a cancelled render stops at its next step and says so. */
export default async function render(task: RenderTask): Promise<RenderResult> {
  Atomics.store(task.cancel, 1, 1);
  Atomics.notify(task.cancel, 1);
  try {
    const png = await renderShareImage(task, { cancelled: () => Atomics.load(task.cancel, 0) === 1 });
    return { png };
  } catch (error) {
    // An error object crossing threads loses its class; a plain answer does not.
    if (error instanceof RenderCancelled) return { cancelled: true };
    throw error;
  }
}

/** WorkerMemory is what a worker holds: its heap, and the fonts it has read (file bytes by face). */
export interface WorkerMemory {
  heapUsed: number;
  external: number;
  fonts: { face: string; bytes: number }[];
}

/** memory reports the worker's memory, for the font memory measurements (bench/cards.ts). */
export function memory(): WorkerMemory {
  const { heapUsed, external } = process.memoryUsage();
  return { heapUsed, external, fonts: loadedFonts() };
}
