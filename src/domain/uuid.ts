/** UUIDs as the API writes them: lower-case, 8-4-4-4-12 hex digits; accepted in any case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** parseUuid returns the lower-case UUID, or null when `value` is not one. */
export function parseUuid(value: string): string | null {
  return value.length === 36 && UUID.test(value) ? value.toLowerCase() : null;
}
