/**
 * The `nonsense` command line. Every command reads the same environment as the server
 * (DATABASE_URL and the rest), through the same configuration module.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Command, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { migrate, openDatabase } from './db/database.ts';
import { loadDemo } from './demo/load-demo.ts';
import { EXPORT_FORMATS, parseExportParams } from './domain/export-params.ts';
import { serializeExport } from './formats/export.ts';
import { ImportError, importFile } from './import/import-file.ts';
import { prepareDatabase, startServer } from './server.ts';
import { createStorage, type Storage } from './storage/index.ts';
import { LABEL_PATTERN } from './storage/tokens.ts';

function config(): Config {
  return loadConfig(process.env);
}

/** withStorage opens the configured database (schema current), runs `work`, and always closes it. */
async function withStorage<T>(work: (storage: Storage) => Promise<T>): Promise<T> {
  const { database } = await prepareDatabase(config());
  try {
    return await work(createStorage(database));
  } finally {
    await database.close();
  }
}

const program = new Command()
  .name('nonsense')
  .description('The Nonsense Entry Service: serve it and manage its database.')
  .showHelpAfterError();

program
  .command('serve')
  .description('serve the HTTP API (the embedded database is created and migrated on first start)')
  .action(async () => {
    await startServer(config());
  });

program
  .command('migrate')
  .description('bring the database schema up to date (never changes data)')
  .action(async () => {
    const database = await openDatabase(config().database);
    try {
      const applied = await migrate(database);
      console.log(applied.length > 0 ? `Applied ${applied.length} migration(s): ${applied.join(', ')}` : 'The schema is up to date.');
    } finally {
      await database.close();
    }
  });

program
  .command('demo')
  .description('load the bundled demo data; what already exists is kept, so running it twice changes nothing')
  .action(async () => {
    await withStorage(async (storage) => {
      const result = await loadDemo(storage);
      console.log(
        `Demo data: ${result.entriesAdded} entries added (${result.entriesSkipped} already present), ` +
          `${result.variablesAdded} variables and ${result.emojisAdded} emojis added.`,
      );
    });
  });

program
  .command('export')
  .description('write the visible entries to standard output, with the same filters and formats as GET /api/v1/nonsense')
  .addOption(new Option('--format <format>', 'file format').choices(EXPORT_FORMATS).default('csv'))
  .option('--q <text>', 'only entries whose text contains this (case-insensitive)')
  .option('--after <timestamp>', 'only entries with timestamp > this (Unix seconds)')
  .option('--before <timestamp>', 'only entries with timestamp < this (Unix seconds)')
  .action(async (options: Record<string, string | undefined>) => {
    const parsed = parseExportParams(Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)));
    if (!parsed.ok) throw new UsageError(parsed.detail.replace(/parameter "(\w+)"/, 'option --$1'));
    await withStorage(async (storage) => {
      const chunks = serializeExport(parsed.value.format, storage.entryQuery.pages(parsed.value.filter), await storage.variables.values());
      await pipeline(Readable.from(chunks), process.stdout);
    });
  });

program
  .command('import')
  .description("add the entries of one of this service's CSV, JSON or TXT exports; all or nothing, and safe to repeat")
  .argument('<file>', 'the file to import')
  .addOption(new Option('--format <format>', 'file format (default: from the extension)').choices(EXPORT_FORMATS))
  .action(async (file: string, options: { format?: 'csv' | 'json' | 'txt' }) => {
    const progress = process.stderr.isTTY
      ? (fraction: number) => process.stderr.write(`\rImporting ${file}: ${(fraction * 100).toFixed(0).padStart(3)}%`)
      : undefined;
    try {
      const result = await withStorage((storage) => importFile(storage, file, { format: options.format, onProgress: progress }));
      if (progress) process.stderr.write('\r\x1b[K');
      console.log(`Imported ${file}: ${result.added} added, ${result.skipped} skipped (already present).`);
    } catch (error) {
      if (progress) process.stderr.write('\n');
      if (error instanceof ImportError) throw new UsageError(`${error.message}. Nothing was imported.`);
      throw error;
    }
  });

const token = program.command('token').description('admin API tokens');

token
  .command('create')
  .description('create a token for <label> (shown once, on the last line)')
  .argument('<label>', 'who the token is for, e.g. alice; recorded in the moderation log')
  .action(async (label: string) => {
    if (!LABEL_PATTERN.test(label)) throw new UsageError('A label is 1 to 64 of A-Z, a-z, 0-9, _ . @ - and starts with a letter or digit.');
    await withStorage(async (storage) => {
      const created = await storage.tokens.create(label);
      if (created === null) throw new UsageError(`"${label}" already has a token; revoke it first with \`nonsense token revoke ${label}\`.`);
      console.log(`Token for ${label}. It is shown only now; send it as "Authorization: Bearer <token>".`);
      console.log(created);
    });
  });

token
  .command('revoke')
  .description("revoke <label>'s token; it stops working at once")
  .argument('<label>')
  .action(async (label: string) => {
    await withStorage(async (storage) => {
      const count = await storage.tokens.revoke(label);
      if (count === 0) throw new UsageError(`"${label}" has no active token.`);
      console.log(`Revoked the token of ${label}.`);
    });
  });

token
  .command('list')
  .description('list the labels that have an active token')
  .action(async () => {
    await withStorage(async (storage) => {
      for (const { label, created_at } of await storage.tokens.list()) {
        console.log(`${label}\tcreated ${new Date(created_at).toISOString()}`);
      }
    });
  });

/** A mistake in what the user asked for: reported as is, with exit code 1. */
class UsageError extends Error {}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  console.error(`nonsense: ${(error as Error).message}`);
  process.exit(1);
}
