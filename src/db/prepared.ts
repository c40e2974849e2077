/**
 * Queries compiled once. Building and compiling a Kysely query costs about as much as running a
 * primary-key lookup, so the hottest queries (random pick, entry by UUID) are compiled at start-up
 * with placeholder arguments and then run with fresh parameters. They still go through Kysely's
 * driver, so they work on every engine.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- schema-agnostic: migrations and prepared queries run on any Kysely<DB>, as Kysely's own migration docs type them */
import type { Compilable, CompiledQuery, Kysely } from 'kysely';

export type PreparedQuery<Args extends unknown[], Row> = (db: Kysely<any>, ...args: Args) => Promise<Row[]>;

/**
 * prepareQuery compiles `build` once, called with one marker per argument; each run replaces the
 * markers among the compiled parameters with the real arguments.
 */
export function prepareQuery<Args extends unknown[], Row>(
  db: Kysely<any>,
  arity: Args['length'],
  build: (db: Kysely<any>, ...args: Args) => Compilable<Row>,
): PreparedQuery<Args, Row> {
  const withArgs = compileOnce(db, arity, build);
  return async (executor, ...args) => (await executor.executeQuery(withArgs(args))).rows;
}

/** Runs a compiled read at once and returns its rows, or undefined when it cannot now (Database.readNow). */
export type ReadNow = (query: CompiledQuery) => unknown[] | undefined;

/** prepareReadNow is prepareQuery for a synchronous runner: the rows, or undefined when the runner cannot read now. */
export function prepareReadNow<Args extends unknown[], Row>(
  db: Kysely<any>,
  arity: Args['length'],
  build: (db: Kysely<any>, ...args: Args) => Compilable<Row>,
): (run: ReadNow, ...args: Args) => Row[] | undefined {
  const withArgs = compileOnce(db, arity, build);
  return (run, ...args) => run(withArgs(args)) as Row[] | undefined;
}

function compileOnce<Args extends unknown[], Row>(
  db: Kysely<any>,
  arity: Args['length'],
  build: (db: Kysely<any>, ...args: Args) => Compilable<Row>,
): (args: Args) => CompiledQuery<Row> {
  const markers = Array.from({ length: arity }, (_, index) => ({ marker: index }));
  const compiled = build(db, ...(markers as unknown as Args)).compile();
  const slots = compiled.parameters.map((value) => markers.indexOf(value as { marker: number }));
  if (new Set(slots.filter((s) => s !== -1)).size !== arity) throw new Error('prepareQuery: every argument must be used as a parameter');
  return (args) => ({ ...compiled, parameters: slots.map((slot, index) => (slot === -1 ? compiled.parameters[index] : args[slot])) });
}
