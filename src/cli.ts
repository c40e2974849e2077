/**
 * The `nonsense` command line. Every command reads the same environment as the server
 * (DATABASE_URL and the rest), through the same configuration module.
 */
// First: it must run before the first full garbage collection (runtime/tick-shape.ts).
import './runtime/tick-shape.ts';
import fs from 'node:fs';
import os from 'node:os';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Command, Option } from 'commander';
import type { Counts } from './backup/format.ts';
import { ConfigError, galaxyCommandThreadsFor, loadConfig, parseGalaxyThreads, type Config } from './config.ts';
import { migrate, openDatabase } from './db/database.ts';
import { loadDemo } from './demo/load-demo.ts';
import { EXPORT_FORMATS, exportSelection, type ExportParams } from './domain/export-params.ts';
import { describeValidation } from './schemas/validation-wording.ts';
import { ExportQuery } from './schemas/api.ts';
import { compileRequestSchema } from './schemas/validator.ts';
import { exportPageSize, serializeExport } from './formats/export.ts';
import type { ImportResult } from './import/import-file.ts';
import { prepareDatabase, startServer } from './server.ts';
import type { RoundResult } from './services/galaxy/compute.ts';
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

/** The package's version: package.json sits one folder above both src/cli.ts and the bundle dist/cli.js. */
const version = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** PREFIX starts every error message of the command, as the command's own name. */
const PREFIX = 'nonsense: ';

const program = new Command()
  .name('nonsense')
  .description('The Nonsense Entry Service: serve it and manage its database.')
  .version(version, '-V, --version', 'print the version')
  // Commander's own messages (an unknown option, a missing argument) begin with "error: ".
  .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, PREFIX)) })
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
  .option('--format <format>', `file format: ${EXPORT_FORMATS.join(', ')} (default: csv)`)
  .option('--q <text>', 'only entries whose text contains this (case-insensitive)')
  .option('--after <timestamp>', 'only entries with timestamp > this (Unix seconds)')
  .option('--before <timestamp>', 'only entries with timestamp < this (Unix seconds)')
  .action(async (options: Record<string, string | undefined>) => {
    // The options are the query parameters of GET /api/v1/nonsense, checked by the same schema.
    const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
    const validate = exportQueryValidator();
    const checked = validate(given);
    if (checked === false) throw new UsageError(asOption(describeValidation(validate.errors ?? [], 'querystring').detail));
    const parsed = exportSelection((typeof checked === 'object' ? checked.value : given) as ExportParams);
    if (!parsed.ok) throw new UsageError(asOption(parsed.detail));
    await withStorage(async (storage) => {
      const chunks = serializeExport(parsed.value.format, storage.entryQuery.pages(parsed.value.filter, exportPageSize), await storage.variables.values());
      await pipeline(Readable.from(chunks), process.stdout);
    });
  });

let exportQuery: ReturnType<typeof compileRequestSchema> | undefined;
const exportQueryValidator = () => (exportQuery ??= compileRequestSchema({ schema: ExportQuery, httpPart: 'querystring' }));

/** asOption words a message about a query parameter for the command line: `parameter "q"` → `option --q`. */
const asOption = (detail: string) => detail.replace(/parameter "(\w+)"/, 'option --$1');

program
  .command('import')
  .description("add the entries of one of this service's CSV, JSON or TXT exports; checked whole before anything is written, and safe to repeat")
  .argument('<file>', 'the file to import')
  .addOption(new Option('--format <format>', 'file format (default: from the extension)').choices(EXPORT_FORMATS))
  .addHelpText(
    'after',
    `
What each format restores:
  csv, json  every visible entry exactly: raw text (original_nonsense when it has a variable), uuid and
             timestamp. Server variables are not in exports: a text using one that this database does
             not define is delivered literally, and the import lists such variables.
  txt        only delivered texts, one a line: no uuid, no timestamp (the import time is used), no
             multi-line entries, and server variables already replaced by a random value, so importing
             a TXT export into the database it came from adds those entries again as new ones.
Every row is checked before anything is written: a bad row is named and nothing is imported. Entries
are then written in batches; an import cut short (a full disk, an interruption) keeps the batches it
wrote, and running the same command again adds the rest, since entries already present are skipped.
Hidden entries, variables, emojis, reports, tokens and the moderation log: use \`nonsense backup\` and
\`nonsense restore\`.`,
  )
  .action(async (file: string, options: { format?: 'csv' | 'json' | 'txt' }) => {
    const progress = process.stderr.isTTY
      ? (fraction: number, phase: string) => process.stderr.write(`\r${phase === 'checking' ? 'Checking' : 'Importing'} ${file}: ${(fraction * 100).toFixed(0).padStart(3)}%`)
      : undefined;
    // Loaded here: the parsers of import files are of no use to `serve` (and cost it memory).
    const { ImportError, ImportInterruptedError, importFile } = await import('./import/import-file.ts');
    try {
      const result = await withStorage((storage) => importFile(storage, file, { format: options.format, onProgress: progress }));
      if (progress) process.stderr.write('\r\x1b[K');
      console.log(`Imported ${file}: ${result.added} added, ${result.skipped} skipped (already present).`);
      warnUndefinedVariables(result.undefinedVariables);
    } catch (error) {
      if (progress) process.stderr.write('\n');
      if (error instanceof ImportError) throw new UsageError(`${error.message}. Nothing was imported.`);
      if (error instanceof ImportInterruptedError) throw new UsageError(error.message);
      throw error;
    }
  });

/** At most this many undefined variables are named one by one. */
const LISTED_VARIABLES = 20;

/** warnUndefinedVariables names the variable tokens the imported texts use but the database does not define. */
function warnUndefinedVariables(list: ImportResult['undefinedVariables']): void {
  if (list.length === 0) return;
  for (const { name, entries } of list.slice(0, LISTED_VARIABLES)) {
    console.warn(
      entries === 1
        ? `1 entry uses ${name}, which is not defined; it will be delivered literally.`
        : `${entries} entries use ${name}, which is not defined; they will be delivered literally.`,
    );
  }
  if (list.length > LISTED_VARIABLES) console.warn(`... and ${list.length - LISTED_VARIABLES} more undefined variables.`);
  console.warn('Define them on /admin (Variables) or with PUT /api/v1/admin/variables/<name>; `nonsense backup` and `restore` move variables with the entries.');
}

program
  .command('galaxy')
  .description('bring the galaxy (GET /api/v1/nonsense/galaxy) up to date now: place new entries, or lay it all out anew when needed')
  .option('--refit', 'lay out every entry anew, however little changed')
  .option('--threads <count>', 'threads a full layout places entries on: 1 to 16, or auto as the server chooses (default: GALAXY_THREADS when set, else one a core up to 8)')
  .action(async (options: { refit?: boolean; threads?: string }) => {
    const threads = galaxyCommandThreads(options.threads);
    const started = Date.now();
    const { GalaxyComputer } = await import('./services/galaxy/compute.ts');
    const result = await withStorage((storage) =>
      new GalaxyComputer(storage.database, {
        log: (message, details) => console.error(`${message}${details ? ` ${JSON.stringify(details)}` : ''}`),
        threads,
      }).run({ refit: options.refit === true }),
    );
    if (result.action === 'busy') throw new UsageError('Another process is laying out the galaxy right now; it will store the result. Try again later.');
    console.log(describeRound(result, (Date.now() - started) / 1000, threads));
  });

/**
 * galaxyCommandThreads: the threads of `nonsense galaxy`. `--threads` first, then GALAXY_THREADS, else
 * every core up to 8: unlike the server's background layout, the command has no requests to leave
 * cores for.
 */
function galaxyCommandThreads(option: string | undefined): number {
  if (option !== undefined) {
    try {
      return parseGalaxyThreads(option);
    } catch (error) {
      throw new UsageError(`--threads ${(error as Error).message}.`);
    }
  }
  return process.env.GALAXY_THREADS === undefined ? galaxyCommandThreadsFor(os.availableParallelism()) : config().galaxyThreads;
}

/** describeRound says in a line what a galaxy round did. */
function describeRound(result: Exclude<RoundResult, { action: 'busy' }>, seconds: number, threads: number): string {
  const took = `in ${seconds.toFixed(1)} s`;
  switch (result.action) {
    case 'none':
      return 'The galaxy is up to date.';
    case 'placed':
      return `Placed ${result.placed} new or changed entries into the galaxy ${took}.`;
    case 'answered':
      return `Stored the galaxy's answer (${result.stars} stars) ${took}.`;
    case 'fitted':
      return result.superseded
        ? `Laid out ${result.points} entries ${took}, but another process stored a newer layout meanwhile; that one is kept.`
        : result.sample === result.points
          ? `Laid out ${result.points} entries ${took}.`
          : `Laid out ${result.points} entries (UMAP fitted on ${result.sample}, the rest placed into that layout on ${threads === 1 ? 'one thread' : `${threads} threads`}) ${took}.`;
  }
}

/** describeCounts says what a backup holds, in words. */
function describeCounts(counts: Counts): string {
  const n = (count: number, one: string, many: string) => `${count.toLocaleString('en')} ${count === 1 ? one : many}`;
  return (
    `${n(counts.entry, 'entry', 'entries')}, ${n(counts.variable, 'variable', 'variables')}, ${n(counts.emoji, 'emoji', 'emojis')}, ` +
    `${n(counts.report, 'report', 'reports')}, ${n(counts.token, 'token', 'tokens')} and ${n(counts.log, 'moderation log record', 'moderation log records')}`
  );
}

program
  .command('backup')
  .description('write everything the service knows to <file>: entries in every state, variables, emojis, reports, the moderation log and tokens (as hashes)')
  .argument('<file>', 'the backup file (JSON Lines; gzip-compressed when the name ends in .gz)')
  .option('--force', 'replace <file> when it exists')
  .addHelpText(
    'after',
    `
The database is read as one consistent snapshot; a running service goes on serving and writing
meanwhile. The file is written as a new file next to <file>, readable by its owner only (mode 0600),
and moved to <file> once complete; an existing <file> is replaced only with --force. Restore it with
\`nonsense restore\` into an empty database of either engine.`,
  )
  .action(async (file: string, options: { force?: boolean }) => {
    const progress = process.stderr.isTTY
      ? (written: number, total: number) =>
          process.stderr.write(`\rBacking up to ${file}: ${total === 0 ? 100 : Math.floor((written / total) * 100)}% (${written.toLocaleString('en')} of ${total.toLocaleString('en')} records)`)
      : undefined;
    const { BackupError, writeBackup } = await import('./backup/backup.ts');
    const { database } = await prepareDatabase(config());
    try {
      const result = await writeBackup(database, file, { force: options.force, onProgress: progress });
      if (progress) process.stderr.write('\r\x1b[K');
      console.log(`Backed up to ${file} (${(result.bytes / 1e6).toFixed(1)} MB): ${describeCounts(result.counts)}.`);
    } catch (error) {
      if (progress) process.stderr.write('\n');
      if (error instanceof BackupError) throw new UsageError(`${error.message}. No backup was written.`);
      throw error;
    } finally {
      await database.close();
    }
  });

program
  .command('restore')
  .description('load a file written by `nonsense backup` into the empty database of DATABASE_URL (either engine), all or nothing')
  .argument('<file>', 'the backup file (plain or gzip-compressed)')
  .addHelpText(
    'after',
    `
The database must be empty: a new SQLite file, or a new PostgreSQL database (createdb). Its schema
is brought up to date first, then everything is written in one transaction: a damaged or cut-off
file, or one that does not fit, changes nothing. Every record is checked as the admin API checks the
same data; the first that fails is named with its line. See docs/deployment.md, "Backups" and
"Moving from SQLite to PostgreSQL".`,
  )
  .action(async (file: string) => {
    const progress = process.stderr.isTTY
      ? (fraction: number) => process.stderr.write(`\rRestoring ${file}: ${(fraction * 100).toFixed(0).padStart(3)}%`)
      : undefined;
    const { RestoreError, restoreBackup } = await import('./backup/restore.ts');
    const database = await openDatabase(config().database);
    try {
      await migrate(database);
      const result = await restoreBackup(database, file, { onProgress: progress });
      if (progress) process.stderr.write('\r\x1b[K');
      console.log(
        `Restored ${file} (made ${new Date(result.header.created * 1000).toISOString()} on ${result.header.engine}): ` +
          `${describeCounts(result.counts)}. Revision ${result.revision}.`,
      );
    } catch (error) {
      if (progress) process.stderr.write('\n');
      if (error instanceof RestoreError) throw new UsageError(`Cannot restore: ${error.message}. Nothing was restored.`);
      throw error;
    } finally {
      await database.close();
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
      const tokens = await storage.tokens.list();
      if (tokens.length === 0) console.log('No active tokens. Create one with `nonsense token create <label>`.');
      for (const { label, created_at } of tokens) {
        console.log(`${label}\tcreated ${new Date(created_at).toISOString()}`);
      }
    });
  });

/** A mistake in what the user asked for: reported as is, with exit code 1. */
class UsageError extends Error {}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  console.error(`${PREFIX}${error instanceof Error ? error.message : String(error)}`);
  process.exit(error instanceof ConfigError ? 2 : 1);
}
