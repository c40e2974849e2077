/**
 * Variable substitution, following the contract exactly:
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

const NAME_PATTERN = /^(?:\$[A-Z][A-Z0-9_]*\$|\$\{[a-z][a-z0-9_]*\})$/;
// Sticky: matched at each `$` in turn, so an unknown token does not hide a known one after it.
const TOKEN_AT = /\$[A-Z][A-Z0-9_]*\$|\$\{[a-z][a-z0-9_]*\}/y;

/** isVariableName tells whether `name` follows the token grammar (`$NAME$` or `${name}`). */
export function isVariableName(name: string): boolean {
  return NAME_PATTERN.test(name);
}

/** isClientVariable tells whether `name` is one of the four client-side variables. */
export function isClientVariable(name: string): boolean {
  return CLIENT_NAMES.has(name);
}

export interface Substitution {
  /** The text with every server variable replaced. */
  text: string;
  /** Whether the raw text contains at least one known variable (server or client). */
  hasVariables: boolean;
}

/** substitute replaces the server variables of `raw` in one pass; see the module comment. */
export function substitute(raw: string, variables: ServerVariables, pick: PickIndex = mathRandomPick): Substitution {
  let at = raw.indexOf('$');
  if (at === -1) return { text: raw, hasVariables: false };
  let out = '';
  let copiedUpTo = 0;
  let hasVariables = false;
  while (at !== -1) {
    TOKEN_AT.lastIndex = at;
    const match = TOKEN_AT.exec(raw);
    if (match) {
      const token = match[0];
      const values = variables.get(token);
      if (values !== undefined && values.length > 0) {
        out += raw.slice(copiedUpTo, at) + values[pick(values.length)];
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
  return { text: out + raw.slice(copiedUpTo), hasVariables };
}
