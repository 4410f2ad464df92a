import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { databaseUrl, harnessValue } from '../harness';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function admin<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: harnessValue('pgAdminUrl') });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A fresh, migrated database cloned from the run's template (fast: a file copy in PostgreSQL). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `flightdeck_test_${harnessValue('runId')}_${randomBytes(5).toString('hex')}`;
  await admin((client) =>
    client.query(`CREATE DATABASE "${name}" TEMPLATE "${harnessValue('templateDatabase')}"`),
  );
  return {
    name,
    url: databaseUrl(harnessValue('pgAdminUrl'), name),
    drop: () => dropDatabase(name),
  };
}

/** Drops a database of the test PostgreSQL, even while something is still connected to it. */
export function dropDatabase(name: string): Promise<void> {
  return admin(async (client) => void (await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)));
}
