/** UUIDs as the API writes them: lower-case, 8-4-4-4-12 hex digits; accepted in any case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** parseUuid returns the lower-case UUID, or null when `value` is not one. */
export function parseUuid(value: string): string | null {
  return value.length === 36 && UUID.test(value) ? value.toLowerCase() : null;
}

/**
 * uuidSegment splits a path segment that the schema accepted (a UUID, perhaps with an extension) into
 * its lower-case UUID and its extension as written (`''` when there is none).
 */
export function uuidSegment(segment: string): { uuid: string; extension: string } {
  const dot = segment.indexOf('.');
  return dot === -1 ? { uuid: segment.toLowerCase(), extension: '' } : { uuid: segment.slice(0, dot).toLowerCase(), extension: segment.slice(dot) };
}
