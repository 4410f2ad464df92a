import { isUuid } from '../../domain/uuid';
import type { EntityManager } from '@mikro-orm/postgresql';
import { migrate, openDatabase, type Database } from '../../db/database';
import { ApiKeyStore, type ApiKeySummary } from '../../application/apiKeys';
import { WorkspaceStore } from '../../application/workspaces';
import type { Config } from '../config';
import { resealLegacyValues } from '../../db/reseal';
import { readRuntimeState, secretBoxFor } from '../state';
import { printable } from '../terminalText';

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

const when = (date: Date | null | undefined) => (date ? date.toISOString() : '-');

/** Ids are checked here, so a typo reads as such rather than as PostgreSQL's uuid syntax error. */
function assertUuid(value: string, what: string): void {
  if (!isUuid(value)) throw new Error(`${what} must be a UUID, not "${value}"`);
}

/** Every key of the workspace, revoked ones included; never a key or its hash (only its prefix). */
export async function listApiKeysCommand(config: Config, options: { workspace: string }): Promise<void> {
  assertUuid(options.workspace, '--workspace');
  const keys = await withDatabase(config, async (orm) => {
    const store = new ApiKeyStore(orm.em.fork() as EntityManager);
    const all: ApiKeySummary[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await store.list(options.workspace, { limit: 1000, offset });
      all.push(...page.items);
      if (page.items.length === 0 || all.length >= page.total) return all;
    }
  });
  if (keys.length === 0) {
    process.stdout.write(`No API keys in workspace ${options.workspace}.\n`);
    return;
  }
  const rows = [
    ['ID', 'NAME', 'PREFIX', 'JOB AGENT', 'CREATED', 'LAST USED', 'REVOKED'],
    ...keys.map((key) => [
      key.id,
      printable(key.name),
      key.keyPrefix,
      key.jobAgentId ?? '-',
      when(key.createdAt),
      when(key.lastUsedAt),
      when(key.revokedAt),
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) {
    process.stdout.write(
      `${row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd()}\n`,
    );
  }
}

/** Revokes a key of the workspace; it stops authenticating at once. Revoking it again changes nothing. */
export async function revokeApiKeyCommand(
  config: Config,
  options: { workspace: string },
  keyId: string,
): Promise<void> {
  assertUuid(options.workspace, '--workspace');
  assertUuid(keyId, 'the key id');
  const revoked = await withDatabase(config, (orm) =>
    new ApiKeyStore(orm.em.fork() as EntityManager).revoke(options.workspace, keyId),
  );
  process.stdout.write(
    `API key ${revoked.id} (${printable(revoked.name)}, ${revoked.keyPrefix}…) revoked at ${when(revoked.revokedAt)}\n`,
  );
}

/**
 * Rewrites every value sealed before ciphertexts were bound to their workspace and record, and
 * retires such values once none is left: no process opens one after that.
 */
export async function resealCommand(config: Config): Promise<void> {
  const box = secretBoxFor(config, { generate: false, existing: true });
  const outcome = await withDatabase(config, (orm) =>
    resealLegacyValues(orm.em.fork() as EntityManager, box),
  );
  if (outcome.retiredBefore) {
    process.stdout.write(
      `Values sealed before binding were retired at ${when(outcome.retiredAt)}: nothing to reseal, and none opens.\n`,
    );
    return;
  }
  for (const report of outcome.tables) {
    process.stdout.write(
      `${report.table.padEnd(26)} ${report.rows} row(s), ${report.values} value(s) resealed\n`,
    );
  }
  const total = outcome.tables.reduce((sum, report) => sum + report.values, 0);
  process.stdout.write(
    total > 0 ? `Resealed ${total} value(s).\n` : 'Nothing to reseal: every sealed value is bound.\n',
  );
  process.stdout.write(
    outcome.rowsLeft > 0
      ? `${outcome.rowsLeft} row(s) changed while being read: run \`flightdeck admin reseal\` again.\n`
      : `Values sealed before binding are retired: running processes refuse them within a minute.\n`,
  );
}
