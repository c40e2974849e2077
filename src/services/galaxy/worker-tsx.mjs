// Loads worker.ts into the galaxy's worker thread when the service runs from its TypeScript sources
// (bin/nonsense.js and vitest compile TypeScript for the main thread only; a worker thread starts
// with plain Node). A compiled build loads worker.js directly and never uses this file.
import { tsImport } from 'tsx/esm/api';

await tsImport('./worker.ts', import.meta.url);
