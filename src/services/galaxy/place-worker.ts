/**
 * The task a helper thread of a refit runs (placing.ts): one batch of texts placed into the fit's
 * layout. The thread reads the fit's model once, from the bytes of the first task that brings them,
 * and keeps it for the next batches; a thread that lacks it says so, and is sent it.
 */
import os from 'node:os';
import { LayoutModel } from './layout.ts';

export interface PlaceTask {
  fit: number;
  texts: string[];
  /** The model's bytes (LayoutModel.toBytes), when the thread may not have it yet. */
  model?: Uint8Array;
}

/** The framed coordinates of the batch, or null when the thread lacks the fit's model. */
export type PlaceResult = Float32Array | null;

// Like the galaxy thread, this thread runs below request handling (a nice value is a thread's on Linux).
try {
  os.setPriority(10);
} catch {
  // Not allowed here: it still works, at normal priority.
}

let held: { fit: number; model: LayoutModel } | null = null;

export async function place(task: PlaceTask): Promise<PlaceResult> {
  if (task.model !== undefined && held?.fit !== task.fit) held = { fit: task.fit, model: LayoutModel.restore(task.model) };
  if (held?.fit !== task.fit) return null;
  // The batch is placed in one go: the thread has nothing else to give way to.
  return held.model.place(task.texts, async () => {});
}
