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

/**
 * How long a pooled connection may sit idle before it is closed. Each PostgreSQL backend keeps
 * its caches (catalog, plans, our prepared statements) for as long as it lives: after bench/pull a
 * stack's PostgreSQL held 406 MB with the pools' connections still open (30 s, knex's default), and
 * gives it back a minute after the last burst. Shorter costs requests instead: a burst pays a new
 * connection and its statements' preparation per connection, and every request queued behind it
 * waits (20–49 ms per acquire when a neighbour's burst opened six at once; with 10 s between its
 * bursts, another workspace's agents' p99 went from 49 ms to 74–101 ms,
 * test/integration/security/noisyNeighbour.test.ts).
 */
export const POOL_IDLE_MS = 60_000;

export function ormOptions(options: DatabaseOptions): Options {
  return {
    clientUrl: options.url,
    entities,
    extensions: [Migrator],
    forceUtcTimezone: true,
    // Every unit of work forks its own EntityManager (per request, per activity); a global
    // context would leak identity maps between them.
    allowGlobalContext: false,
    pool: { min: 0, max: options.poolMax ?? 10, idleTimeoutMillis: POOL_IDLE_MS },
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

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const orm = await MikroORM.init(ormOptions(options));
  bindParameters(orm);
  return orm;
}

type Connection = ReturnType<Database['em']['getConnection']>;
type KnexQuery = {
  toSQL(): { sql: string; bindings?: readonly unknown[] };
  client: { transacting?: unknown };
};

/** A knex client's own `raw`: a query bound to that client (the pool's, or a transaction's connection). */
interface RawClient {
  raw(sql: string, bindings?: readonly unknown[]): PromiseLike<unknown>;
}

/**
 * MikroORM formats a raw query's parameters into its text, escaping every value: a fan-out batch's
 * statements carry megabytes of JSON, and escaping and parsing them cost more than running them.
 * This connection passes parameters to PostgreSQL as bind parameters instead (the same `?`
 * placeholders; objects go as JSON, as MikroORM sends them). A query without parameters is sent as
 * it is, so a `?` in its text (a JSON operator, a migration's comment) stays a `?`.
 */
function bindParameters(orm: Database): void {
  const connection = orm.em.getConnection() as Connection & {
    ensureConnection(): Promise<void>;
    transformRawResult(result: unknown, method: string): unknown;
  };
  connection.execute = async function execute(
    query: string | KnexQuery,
    params: readonly unknown[] = [],
    method: 'all' | 'get' | 'run' = 'all',
    ctx?: unknown,
  ) {
    await connection.ensureConnection();
    let sql = query as string;
    if (typeof query === 'object') {
      ctx ??= query.client.transacting ? query : undefined;
      const compiled = query.toSQL();
      sql = compiled.sql;
      params = compiled.bindings ?? [];
    }
    // Inside a transaction its own client runs the query: what knex's `transacting` sets, without
    // its sanity check, a lodash `isEmpty` over the transaction's every property (2 % of the API's
    // CPU during resource PUTs).
    const client = ctx === undefined ? (connection.getKnex().client as RawClient) : transactionClient(ctx);
    const raw = params.length > 0 ? client.raw(sql, params.map(asBindParameter)) : client.raw(sql);
    return connection.transformRawResult(await raw, method);
  } as Connection['execute'];
}

/** The client of a transaction's connection; a context without one is a bug, never the pool's. */
export function transactionClient(ctx: unknown): RawClient {
  const client = (ctx as { client?: RawClient & { transacting?: boolean } }).client;
  if (!client?.transacting) throw new Error('a query was given a transaction context without its client');
  return client;
}

/** Plain objects as JSON text (PostgreSQL casts it where a column or `?::jsonb` wants JSON). */
function asBindParameter(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date || Buffer.isBuffer(value) || Array.isArray(value)) return value;
  return JSON.stringify(value);
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
