import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startGuardian } from '../cli/embedded/guardian';
import { startTemporalDevServer } from '../cli/embedded/temporalServer';
import { freePort } from '../cli/embedded/processes';
import { ensureOpa } from '../cli/opa';
import { ensureTemporalCli } from '../cli/temporalCli';
import { migrate, openDatabase } from '../db/database';
import { bundleWorkflows } from '../worker/workflowSource';
import { ensureChromium } from './chromium';
import { databaseUrl, HARNESS_ENV } from './harness';
import { testPostgres } from './testPostgres';

/**
 * Once per jest run: one Temporal dev server (in memory, our search attributes registered), one
 * migrated template database that each test file clones, and one workflow bundle for every worker.
 * What the suite needs on the machine (Temporal's CLI, OPA, Chromium, a PostgreSQL: test/testPostgres.ts)
 * is found or got first.
 */
export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const runId = `${process.pid}_${Date.now().toString(36)}`;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-test-'));
  const log = (line: string) => process.stderr.write(`[test setup] ${line}\n`);

  const cli = await ensureTemporalCli(log);
  // Stacks find it in the cache (test/helpers/stack.ts).
  await ensureOpa(log);
  const chromium = await ensureChromium(log);
  const postgres = await testPostgres(log);
  const adminUrl = postgres.adminUrl;
  const templateDatabase = `flightdeck_test_${runId}_template`;

  const [temporal, bundle] = await Promise.all([
    freePort().then((port) =>
      startTemporalDevServer({
        cliPath: cli.path,
        stateDir,
        port,
        persistent: false,
        namespace: 'default',
        ...temporalNiceness(),
      }),
    ),
    // Plain, as a worker with tracing off runs it; the tracing test bundles its own (test/helpers/stack.ts).
    bundleWorkflows(false, { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} }),
    prepareTemplate(adminUrl, templateDatabase),
  ]);
  // If jest is killed before its teardown runs, the guardian still stops the dev server.
  const guardian = startGuardian();
  guardian.watch({ pid: temporal.pid });
  if (postgres.embedded) guardian.watch({ pid: postgres.embedded.pid, signal: 'INT' });
  const bundlePath = path.join(stateDir, 'workflow-bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);

  process.env[HARNESS_ENV.temporalAddress] = temporal.address;
  process.env[HARNESS_ENV.temporalCli] = cli.path;
  process.env[HARNESS_ENV.pgAdminUrl] = adminUrl;
  process.env[HARNESS_ENV.templateDatabase] = templateDatabase;
  process.env[HARNESS_ENV.runId] = runId;
  process.env[HARNESS_ENV.workflowBundle] = bundlePath;
  process.env[HARNESS_ENV.chromium] = chromium;
  (globalThis as Record<string, unknown>).__flightdeckHarness = {
    temporal,
    guardian,
    stateDir,
    adminUrl,
    runId,
    postgres: postgres.embedded,
  };
  log(
    `Temporal ${temporal.address}, template database ${templateDatabase}, ready in ${Date.now() - started} ms`,
  );
}

async function prepareTemplate(adminUrl: string, templateDatabase: string): Promise<void> {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${templateDatabase}"`);
  } finally {
    await admin.end();
  }
  const orm = await openDatabase({ url: databaseUrl(adminUrl, templateDatabase), poolMax: 1 });
  try {
    await migrate(orm);
  } finally {
    await orm.close();
  }
}

/**
 * FLIGHTDECK_TEST_BACKGROUND_NICENESS: Temporal below the default CPU priority, as `flightdeck
 * start` runs it, for the run that measures the request path (the noisy-neighbour test, package.json
 * `test`). The rest of the suite keeps Temporal at the default priority, where its workflows are
 * what the tests wait for.
 */
function temporalNiceness(): { niceness?: number } {
  const value = process.env.FLIGHTDECK_TEST_BACKGROUND_NICENESS;
  return value ? { niceness: Number(value) } : {};
}
