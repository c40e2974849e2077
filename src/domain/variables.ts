/**
 * Variable substitution (docs/decisions.md, "Entries and variables"):
 * - a token is `$NAME$` (NAME: [A-Z][A-Z0-9_]*) or `${name}` (name: [a-z][a-z0-9_]*);
 * - a token is a variable only when it is known: one of the four client-side variables or a server
 *   variable defined in the database; any other token is plain text;
 * - every occurrence of a server variable is replaced independently by one of its values picked
 *   uniformly; replacement is one pass (a value is never expanded again);
 * - client-side variables stay literally in the text, for the client to replace.
 */
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/** The variables clients resolve themselves; the server never replaces them. */
export const CLIENT_VARIABLES: readonly { name: string; description: string }[] = [
  { name: '$AUTHOR$', description: 'The name of the person who asked for the entry.' },
  { name: '$CHANNEL$', description: 'The name of the channel the entry is posted in.' },
  { name: '$SERVER$', description: 'The name of the server or community the entry is posted in.' },
  { name: '${app_name}', description: 'The name of the application or bot that shows the entry.' },
];

const CLIENT_NAMES: ReadonlySet<string> = new Set(CLIENT_VARIABLES.map((v) => v.name));

/** Server variables by token, e.g. `$ANIMAL$` → ['cat', 'goose']. Every list is non-empty. */
export type ServerVariables = ReadonlyMap<string, readonly string[]>;

/** Picks an index in [0, length). */
export type PickIndex = (length: number) => number;

export const mathRandomPick: PickIndex = (length) => Math.floor(Math.random() * length);

/** seededPick gives a reproducible sequence of picks for one seed (e.g. an entry's UUID). */
export function seededPick(seed: string): PickIndex {
  let hash = 0x811c9dc5; // FNV-1a, to fold the seed string into the generator's 32-bit seed
  for (let i = 0; i < seed.length; i++) {
    hash ^= seed.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  const rng = xoroshiro128plus(hash | 0);
  return (length) => uniformInt(rng, 0, length - 1);
}

/** A variable name: `$NAME$` or `${name}` (the request schemas say it too). */
export const VARIABLE_NAME_PATTERN = /^(?:\$[A-Z][A-Z0-9_]*\$|\$\{[a-z][a-z0-9_]*\})$/;
// Sticky: matched at each `$` in turn, so an unknown token does not hide a known one after it.
const TOKEN_AT = /\$[A-Z][A-Z0-9_]*\$|\$\{[a-z][a-z0-9_]*\}/y;

/** isVariableName tells whether `name` follows the token grammar (`$NAME$` or `${name}`). */
export function isVariableName(name: string): boolean {
  return VARIABLE_NAME_PATTERN.test(name);
}

/** isClientVariable tells whether `name` is one of the four client-side variables. */
export function isClientVariable(name: string): boolean {
  return CLIENT_NAMES.has(name);
}

/** serverVariableProblem says why `name` cannot name a server variable, or null when it can. */
export function serverVariableProblem(name: string): string | null {
  if (!isVariableName(name)) return `"${name.slice(0, 70)}" is not a variable name: use $NAME$ (A-Z, 0-9, _) or \${name} (a-z, 0-9, _).`;
  if (isClientVariable(name)) return `${name} is a client-side variable; clients replace it, so it cannot have server values.`;
  return null;
}

export interface Substitution {
  /** The text with every server variable replaced. */
  text: string;
  /** Whether the raw text contains at least one known variable (server or client). */
  hasVariables: boolean;
}

/**
 * eachServerVariable walks `raw` as `substitute` reads it (see the module comment): for each server
 * variable it calls `visit` with the literal text before it and the variable's values. It returns the
 * literal text after the last one, and whether `raw` contains any known variable (server or client).
 */
function eachServerVariable(
  raw: string,
  variables: ServerVariables,
  visit: (literal: string, values: readonly string[]) => void,
): { rest: string; hasVariables: boolean } {
  let at = raw.indexOf('$');
  if (at === -1) return { rest: raw, hasVariables: false };
  let copiedUpTo = 0;
  let hasVariables = false;
  while (at !== -1) {
    TOKEN_AT.lastIndex = at;
    const match = TOKEN_AT.exec(raw);
    if (match) {
      const token = match[0];
      const values = variables.get(token);
      if (values !== undefined && values.length > 0) {
        visit(raw.slice(copiedUpTo, at), values);
        copiedUpTo = at + token.length;
        hasVariables = true;
        at = raw.indexOf('$', copiedUpTo);
        continue;
      }
      if (CLIENT_NAMES.has(token)) {
        hasVariables = true;
        at = raw.indexOf('$', at + token.length);
        continue;
      }
    }
    at = raw.indexOf('$', at + 1);
  }
  return { rest: raw.slice(copiedUpTo), hasVariables };
}

/** substitute replaces the server variables of `raw` in one pass; see the module comment. */
export function substitute(raw: string, variables: ServerVariables, pick: PickIndex = mathRandomPick): Substitution {
  let out = '';
  const { rest, hasVariables } = eachServerVariable(raw, variables, (literal, values) => {
    out += literal + values[pick(values.length)];
  });
  return { text: out + rest, hasVariables };
}

/**
 * tokensOf lists the distinct tokens of `raw` that follow the variable grammar, known or not, in order
 * of first appearance, looking at every `$` as `substitute` does. The import uses it to name the
 * tokens a database does not define.
 */
export function tokensOf(raw: string): string[] {
  const found = new Set<string>();
  for (let at = raw.indexOf('$'); at !== -1; at = raw.indexOf('$', at + 1)) {
    TOKEN_AT.lastIndex = at;
    const match = TOKEN_AT.exec(raw);
    if (match) found.add(match[0]);
  }
  return [...found];
}

/** A raw text cut at its server variables: literal text, and at each server variable its values. */
export interface VariableParts {
  /** Alternating literal text and value lists, starting and ending with literal text (maybe empty). */
  parts: (string | readonly string[])[];
  /** Whether the raw text contains at least one known variable (server or client), as in `substitute`. */
  hasVariables: boolean;
}

/**
 * splitVariables cuts `raw` where `substitute` would replace a server variable, so that joining the
 * parts with one value picked from each list gives what `substitute` gives with the same picks. It
 * lets a text be prepared once and completed per request.
 */
export function splitVariables(raw: string, variables: ServerVariables): VariableParts {
  const parts: (string | readonly string[])[] = [];
  const { rest, hasVariables } = eachServerVariable(raw, variables, (literal, values) => parts.push(literal, values));
  parts.push(rest);
  return { parts, hasVariables };
}
