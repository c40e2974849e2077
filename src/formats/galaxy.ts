/**
 * The galaxy's two shapes, as the public galaxy pages read them:
 *
 * - CSV: the header `uuid,umap_dim_0,umap_dim_1,umap_dim_2,point_size`, then one record per star,
 *   CRLF between lines and none after the last (RFC 4180 allows either). The pages parse the body with
 *   `Papa.parse(text, { header: true })`, which turns a final line break into one more, empty row (a
 *   star at NaN): so each record carries the CRLF before it, and the header none, which keeps a body
 *   the plain concatenation of its records, however they are picked or streamed.
 *   Every field is a lower-case uuid or a plain decimal number, so none
 *   needs quoting; and none is prefixed against spreadsheet formulas as the export's texts are: a
 *   negative number is a number to a spreadsheet, and `'-3.2` would defeat `parseFloat`.
 * - JSON: an array of objects with the same five fields, numbers as numbers.
 */
import type { GalaxyPoint } from '../domain/records.ts';

export const GALAXY_FORMATS = ['csv', 'json'] as const;
export type GalaxyFormat = (typeof GALAXY_FORMATS)[number];

export const GALAXY_COLUMNS = ['uuid', 'umap_dim_0', 'umap_dim_1', 'umap_dim_2', 'point_size'] as const;

export const GALAXY_CONTENT_TYPES: Readonly<Record<GalaxyFormat, string>> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
};

/** A number as the galaxy writes it: shortest round-trip decimal, never `-0`, never an exponent at our scales. */
const number = (value: number) => (Object.is(value, -0) ? '0' : String(value));

/** The header line, without a line break: each record brings the one before it. */
export const GALAXY_CSV_HEADER = GALAXY_COLUMNS.join(',');

/**
 * Which bytes a layout's body is made of, in the galaxy's ETags: raised whenever the same stars come
 * out as other bytes, so that a cache holding a body of the old shape does not get a 304 for it.
 * 2: no line break after the last CSV record.
 */
export const GALAXY_BODY_SHAPE = 2;

/** csvRecord is one star's CSV record, preceded by the CRLF that ends the line before it. */
export function csvRecord(p: GalaxyPoint): string {
  return `\r\n${p.uuid},${number(p.x)},${number(p.y)},${number(p.z)},${number(p.point_size)}`;
}

/** jsonItem is one star's JSON object (uuids are lower-case hex: nothing to escape). */
export function jsonItem(p: GalaxyPoint): string {
  return `{"uuid":"${p.uuid}","umap_dim_0":${number(p.x)},"umap_dim_1":${number(p.y)},"umap_dim_2":${number(p.z)},"point_size":${number(p.point_size)}}`;
}

/**
 * galaxyChunks renders `format` from pages of stars already rendered by csvRecord or jsonItem, one
 * string per page (the header or `[` first).
 */
export async function* galaxyChunks(format: GalaxyFormat, pages: AsyncIterable<readonly string[]>): AsyncGenerator<string> {
  if (format === 'csv') {
    yield GALAXY_CSV_HEADER;
    for await (const page of pages) yield page.join('');
    return;
  }
  let first = true;
  yield '[';
  for await (const page of pages) {
    if (page.length === 0) continue;
    yield `${first ? '' : ','}${page.join(',')}`;
    first = false;
  }
  yield ']';
}

/** renderPages renders pages of stars in `format`'s records, for galaxyChunks. */
export async function* renderPages(format: GalaxyFormat, pages: AsyncIterable<readonly GalaxyPoint[]>): AsyncGenerator<string[]> {
  const render = format === 'csv' ? csvRecord : jsonItem;
  for await (const page of pages) yield page.map(render);
}
