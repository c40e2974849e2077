/** The checked-in client types are the ones /openapi.json gives today: drift fails the build. */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clientTypes, currentDocument, SCHEMA_FILE } from './generate.ts';

describe('the generated client types', () => {
  it('match the API description (regenerate with `npm run openapi:types`)', async () => {
    const generated = await clientTypes(await currentDocument());
    const checkedIn = fs.readFileSync(SCHEMA_FILE, 'utf8');
    expect(checkedIn === generated, 'test/client/schema.ts is out of date: run `npm run openapi:types` and commit the result').toBe(true);
  }, 60_000);
});
