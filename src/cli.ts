/**
 * The `nonsense` command line. Every command reads the same environment as the server
 * (DATABASE_URL and the rest), through the same configuration module.
 */
import { Command } from 'commander';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { migrate, openDatabase } from './db/database.ts';
import { loadDemo } from './demo/load-demo.ts';
import { prepareDatabase, startServer } from './server.ts';
import { createStorage } from './storage/index.ts';

function config(): Config {
  return loadConfig(process.env);
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
    const { database } = await prepareDatabase(config());
    try {
      const result = await loadDemo(createStorage(database));
      console.log(
        `Demo data: ${result.entriesAdded} entries added (${result.entriesSkipped} already present), ` +
          `${result.variablesAdded} variables and ${result.emojisAdded} emojis added.`,
      );
    } finally {
      await database.close();
    }
  });

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
