import fs from 'node:fs';
import { Client } from 'pg';
import type { Guardian } from '../cli/embedded/guardian';
import type { TemporalDevServer } from '../cli/embedded/temporalServer';

export default async function globalTeardown(): Promise<void> {
  const harness = (globalThis as Record<string, unknown>).__flightdeckHarness as
    | {
        temporal: TemporalDevServer;
        guardian: Guardian;
        stateDir: string;
        adminUrl: string;
        runId: string;
        postgres?: { stop(): Promise<void> };
      }
    | undefined;
  if (!harness) return;
  await harness.temporal.stop();
  fs.rmSync(harness.stateDir, { recursive: true, force: true });
  // The suite's own server goes with its databases; on anyone else's, the run's databases are dropped.
  if (harness.postgres) await harness.postgres.stop();
  else await dropRunDatabases(harness.adminUrl, harness.runId);
  harness.guardian.release();
}

async function dropRunDatabases(adminUrl: string, runId: string): Promise<void> {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE $1`,
      [`flightdeck_test_${runId}_%`],
    );
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
