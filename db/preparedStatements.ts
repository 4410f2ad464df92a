import type { EntityManager } from '@mikro-orm/postgresql';
import type { QueryResultRow } from 'pg';

/**
 * A statement of the agents' hot path (ARCHITECTURE.md, "The hot path"), run as a named prepared
 * statement: PostgreSQL parses and plans it once per connection instead of on every request, which
 * halves its cost for the poll, and the query builder's formatting is skipped. Text uses `$n`
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
 * Runs one statement on its own pooled connection (the ORM's pool), outside any transaction: the
 * hot path's statements are single statements that commit on their own. Inside a transaction it
 * would run on another connection and escape it, so that is refused.
 */
export async function runPrepared<T extends QueryResultRow>(
  em: EntityManager,
  statement: PreparedStatement,
  values: readonly unknown[],
): Promise<T[]> {
  if (em.isInTransaction()) {
    throw new Error(`prepared statement ${statement.name} cannot run inside a transaction`);
  }
  const client = em.getConnection().getKnex().client as PooledClient;
  const connection = await client.acquireConnection();
  try {
    const result = await connection.query<T>({ name: statement.name, text: statement.text, values });
    return result.rows;
  } finally {
    await client.releaseConnection(connection);
  }
}
