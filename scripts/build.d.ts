// Types of scripts/build.js, for the test setup and the benchmarks that build before they run.
export function sourceFingerprint(): string;
export function isBuildFresh(): boolean;
export function build(): Promise<number>;
export function ensureBuilt(): Promise<boolean>;
