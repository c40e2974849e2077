/**
 * The records every layer passes around, as plain data: an entry as stored (its raw text, before any
 * substitution) and a star of the galaxy. Storage reads them, formats write them, routes pass them on.
 */

/** An entry as stored: raw text, not yet substituted. */
export interface EntryRecord {
  uuid: string;
  text: string;
  timestamp: number;
}

/** A star of the galaxy: an entry's place in the 3D layout and its size. */
export interface GalaxyPoint {
  uuid: string;
  x: number;
  y: number;
  z: number;
  point_size: number;
}
