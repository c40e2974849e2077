/**
 * The bounds on what one OData request may ask of the database. Each is checked before any SQL runs
 * and answers 400 naming the limit (see docs/odata.md, "Limits"). Together with a compiler whose
 * output grows linearly with its input (`compile.ts`), they bound the SQL text, the bound parameters
 * and the work per row of every accepted `$filter` and `$orderby`.
 */

/** Characters of one `$filter` or `$orderby` value. */
export const MAX_OPTION_LENGTH = 2000;

/** Levels of parentheses, `not` and function arguments inside one another. */
export const MAX_NESTING = 32;

/** Operators, functions, properties and literals in one `$filter` (or one whole `$orderby`). */
export const MAX_NODES = 100;

/**
 * Bound parameters of one compiled `$filter` or `$orderby`. Every literal is one; every use of
 * `original_nonsense` costs one per known variable (server and client-side), since it tests the raw
 * text for each of them.
 */
export const MAX_PARAMETERS = 400;

/**
 * Keys of one `$orderby`. A walk by keyset (`all=true`) resumes after a row with a condition that
 * names every key once per key before it, so its size grows with the square of the keys.
 */
export const MAX_ORDER_KEYS = 8;

/**
 * The database time of one request: the statements it runs before its first byte (a page, its
 * `$inlinecount`, a `$count`, the first page of an `all=true` walk) share it. Past it the request is
 * refused with 400, so that every request is answered within a second. On the embedded SQLite a
 * statement runs on the event loop, so this is also the longest a request may hold it.
 */
export const TIME_LIMIT_MS = 800;

/**
 * The database time of each later page of an `all=true` walk with a `$filter` (beyond comparisons of
 * the timestamp with literals), an expression order or a `$skip` (a walk by index without them costs
 * little, the same for every page, and has no limit).
 * Past it the feed is aborted. Wider than TIME_LIMIT_MS: the first page has shown what a page costs,
 * and a busy machine must not cut a long download short.
 */
export const WALK_PAGE_TIME_LIMIT_MS = 4000;
