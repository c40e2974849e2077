// Loads worker.ts into a worker thread when the service runs from its TypeScript sources
// (bin/nonsense.js and vitest compile TypeScript for the main thread only; a worker thread starts
// with plain Node). A compiled build loads worker.js directly and never uses this file.
import { tsImport } from 'tsx/esm/api';

const worker = await tsImport('./worker.ts', import.meta.url);

export default worker.default;

export const searchTask = worker.searchTask;
export const listTask = worker.listTask;
export const odataTask = worker.odataTask;
