import fs from 'node:fs';
import { Client } from 'pg';
import type { Guardian } from '../cli/embedded/guardian';
import type { TemporalDevServer } from '../cli/embedded/temporalServer';

export default async function globalTeardown(): Promise<void> {
  const harness = (globalThis as Record<string, unknown>).__flightdeckHarness as
    | { temporal: TemporalDevServer; guardian: Guardian; stateDir: string; adminUrl: string; runId: string }
    | undefined;
  if (!harness) return;
  await harness.temporal.stop();
  harness.guardian.release();
  fs.rmSync(harness.stateDir, { recursive: true, force: true });
  const admin = new Client({ connectionString: harness.adminUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE $1`,
      [`flightdeck_test_${harness.runId}_%`],
    );
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
