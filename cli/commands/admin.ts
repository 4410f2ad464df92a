import type { EntityManager } from '@mikro-orm/postgresql';
import { migrate, openDatabase, type Database } from '../../db/database';
import { ApiKeyStore } from '../../db/stores/apiKeys';
import { WorkspaceStore } from '../../db/stores/workspaces';
import type { Config } from '../config';
import { readRuntimeState } from '../state';

/**
 * The database the admin commands talk to: DATABASE_URL, else the one a running `flightdeck start`
 * recorded in the data directory.
 */
export function resolveDatabaseUrl(config: Config): string {
  const url = config.database.url ?? readRuntimeState(config.dataDir)?.databaseUrl;
  if (!url) {
    throw new Error(
      `No database to talk to: set DATABASE_URL, or run \`flightdeck start\` (it records the embedded ` +
        `database in ${config.dataDir}) and run this command from the same directory.`,
    );
  }
  return url;
}

async function withDatabase<T>(config: Config, work: (orm: Database) => Promise<T>): Promise<T> {
  const orm = await openDatabase({ url: resolveDatabaseUrl(config), poolMax: 2 });
  try {
    return await work(orm);
  } finally {
    await orm.close();
  }
}

export async function migrateCommand(config: Config): Promise<void> {
  const applied = await withDatabase(config, migrate);
  process.stdout.write(applied.length > 0 ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date.\n');
}

export async function createWorkspaceCommand(
  config: Config,
  options: { name: string; slug?: string },
): Promise<void> {
  const workspace = await withDatabase(config, (orm) =>
    new WorkspaceStore(orm.em.fork() as EntityManager).create(options),
  );
  process.stdout.write(`Workspace created\n  id:   ${workspace.id}\n  slug: ${workspace.slug}\n`);
  process.stdout.write(`Next: flightdeck apikey create --workspace ${workspace.id}\n`);
}

export async function createApiKeyCommand(
  config: Config,
  options: { workspace: string; name: string; agent?: string },
): Promise<void> {
  const issued = await withDatabase(config, (orm) =>
    new ApiKeyStore(orm.em.fork() as EntityManager).create({
      workspaceId: options.workspace,
      name: options.name,
      jobAgentId: options.agent,
    }),
  );
  const scope = options.agent ? `, limited to job agent ${options.agent}` : '';
  process.stdout.write(
    `API key created for workspace ${issued.record.workspaceId}${scope} (shown once; store it now):\n`,
  );
  process.stdout.write(`${issued.key}\n`);
}
