import type { EntityManager } from '@mikro-orm/postgresql';
import type { QueryResultRow } from 'pg';
import { transactionClient } from './database';

/**
 * A statement of the hot path (ARCHITECTURE.md, "The processes of `flightdeck start`"), run as a
 * named prepared statement: PostgreSQL parses it once per connection instead of on every call, and
 * plans it once when a generic plan costs no more than plans for the values (planning was 40 % of
 * PostgreSQL's time per resource PUT); the query builder's formatting is skipped. Text uses `$n`
 * placeholders. Names are unique per statement: a connection keeps the text it prepared first.
 */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

const names = new Set<string>();

/** Declares a prepared statement once, at module load; a second statement of the same name is a bug. */
export function preparedStatement(name: string, text: string): PreparedStatement {
  if (names.has(name)) throw new Error(`prepared statement ${name} is declared twice`);
  names.add(name);
  return { name, text };
}

/**
 * A statement composed with `?` placeholders, as the fragments several statements share are
 * (db/sql.ts `SqlFragment`), numbered `$1`, `$2`… in order. Its text must use no JSON `?` operator.
 */
export function numberedPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

const OUTDATED = 'a prepared statement read a table whose columns have changed';

/**
 * A statement prepared before a migration changed the columns it returns (`SELECT *` of a table
 * given a column while this process runs) fails on that connection from then on. The pool
 * replaces a connection marked disposed when it is next acquired, so the statement fails once
 * per connection, and is prepared afresh.
 */
function planOutdated(error: unknown): boolean {
  const { code, routine } = error as { code?: string; routine?: string };
  return code === '0A000' && routine === 'RevalidateCachedQuery';
}

interface PgConnection {
  query<T extends QueryResultRow>(config: {
    name: string;
    text: string;
    values: readonly unknown[];
  }): Promise<{ rows: T[] }>;
}

interface PooledClient {
  acquireConnection(): Promise<PgConnection>;
  releaseConnection(connection: PgConnection): Promise<void>;
}

/**
 * Runs one statement: on the transaction's connection inside a transaction (it is part of it, and
 * the connection keeps the statement prepared for every later transaction on it), otherwise on a
 * pooled connection of its own, where it commits alone. Errors come as the ORM's (a unique
 * violation is a `UniqueConstraintViolationException`), as they would from `em.execute`.
 */
export async function runPrepared<T extends QueryResultRow>(
  em: EntityManager,
  statement: PreparedStatement,
  values: readonly unknown[],
): Promise<T[]> {
  const client = (em.isInTransaction()
    ? transactionClient(em.getTransactionContext())
    : em.getConnection().getKnex().client) as unknown as PooledClient;
  const connection = await client.acquireConnection();
  try {
    const result = await connection.query<T>({ name: statement.name, text: statement.text, values });
    return result.rows;
  } catch (error) {
    if (planOutdated(error)) (connection as { __knex__disposed?: string }).__knex__disposed = OUTDATED;
    throw em.getDriver().convertException(error as Error);
  } finally {
    await client.releaseConnection(connection);
  }
}
