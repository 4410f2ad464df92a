import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { Client } from 'pg';
import { entities } from './entities';
import { migrations } from './migrations';

export interface DatabaseOptions {
  url: string;
  poolMax?: number;
}

export type Database = MikroORM;

export function ormOptions(options: DatabaseOptions): Options {
  return {
    clientUrl: options.url,
    entities,
    extensions: [Migrator],
    forceUtcTimezone: true,
    // Every unit of work forks its own EntityManager (per request, per activity); a global
    // context would leak identity maps between them.
    allowGlobalContext: false,
    pool: { min: 0, max: options.poolMax ?? 10 },
    discovery: { warnWhenNoEntities: false },
    migrations: {
      tableName: 'flightdeck_migrations',
      migrationsList: migrations,
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
  };
}

export function openDatabase(options: DatabaseOptions): Promise<Database> {
  return MikroORM.init(ormOptions(options));
}

/** Any number from a 64-bit space; all that matters is that every Flightdeck process uses the same. */
const MIGRATION_LOCK = 7_311_202_611;

/**
 * Applies pending migrations under an advisory lock, so several processes starting at once
 * (replicas, a one-shot migrate job) apply each migration exactly once. The lock lives on its own
 * connection, outside the pool the migrator draws from.
 */
export async function migrate(orm: Database): Promise<string[]> {
  const lock = new Client({ connectionString: orm.config.get('clientUrl') });
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await orm.getMigrator().up();
    return applied.map((migration) => migration.name);
  } finally {
    await lock.end();
  }
}

/** `SELECT 1`, for readiness checks. */
export async function pingDatabase(orm: Database): Promise<void> {
  await orm.em.getConnection().execute('SELECT 1');
}
