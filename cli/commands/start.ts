import fs from 'node:fs';
import { migrate, openDatabase, type Database } from '../../db/database';
import { followLegacySealRetirement } from '../../db/legacySeals';
import { installTemporalRuntime } from '../../worker/temporalRuntime';
import { ensureDefaultWorkspace } from '../bootstrap';
import type { Config } from '../config';
import { startGuardian } from '../embedded/guardian';
import { startEmbeddedPostgres } from '../embedded/postgres';
import { startTemporalDevServer } from '../embedded/temporalServer';
import { createLogger } from '../logger';
import { freePort } from '../embedded/processes';
import { startApiService, startWorkerService, type ApiService } from '../services';
import { acquireStartLock, clearRuntimeState, secretBoxFor, writeRuntimeState } from '../state';
import { ensureOpa } from '../opa';
import { ensureTemporalCli } from '../temporalCli';
import { startTracing } from '../tracing';

/**
 * `flightdeck start`: the whole service in one command. PostgreSQL and Temporal are started here
 * unless DATABASE_URL / TEMPORAL_ADDRESS point at running ones; then migrations, the worker and
 * the API. Ctrl-C (or SIGTERM) stops everything in reverse order.
 */
export async function startCommand(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel);
  // The worker runs in this process: its SDK metrics join the API's /metrics.
  const temporalSdkUrl = installTemporalRuntime(logger, await freePort());
  const say = (line: string) => process.stdout.write(`${line}\n`);
  fs.mkdirSync(config.dataDir, { recursive: true });
  const releaseLock = acquireStartLock(config.dataDir);
  const guardian = startGuardian();
  const stack: { name: string; stop: () => Promise<void> }[] = [];
  // First in, last out: spans of the whole stop are still sent.
  const tracing = startTracing(config, 'flightdeck');
  if (tracing) stack.push({ name: 'tracing', stop: tracing.shutdown });
  const stopAll = async () => {
    for (const part of stack.reverse()) {
      await part.stop().catch((error) => logger.error({ err: error }, `stopping ${part.name} failed`));
    }
    guardian.release();
    clearRuntimeState(config.dataDir);
    releaseLock();
  };

  let stopRequested: (signal: string) => void = () => undefined;
  const stopSignal = new Promise<string>((resolve) => (stopRequested = resolve));
  const onSignal = (signal: NodeJS.Signals) => stopRequested(signal);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const started = Date.now();
    const [postgres, temporal] = await startDependencies(config, say);
    if (postgres.status === 'fulfilled' && postgres.value)
      stack.push({ name: 'PostgreSQL', stop: postgres.value.stop });
    if (temporal.status === 'fulfilled' && temporal.value)
      stack.push({ name: 'Temporal', stop: temporal.value.stop });
    guardian.watch({
      pids: temporal.status === 'fulfilled' && temporal.value ? [temporal.value.pid] : [],
      commands: postgres.status === 'fulfilled' && postgres.value ? [postgres.value.stopCommand] : [],
    });
    if (postgres.status === 'rejected') throw postgres.reason;
    if (temporal.status === 'rejected') throw temporal.reason;

    // Plan validation rules need `opa`: found in the cache, or built once; without it they answer 503.
    await ensureOpa(say).catch((error: unknown) =>
      say(`Plan validation (OPA) is unavailable: ${(error as Error).message}`),
    );

    const databaseUrl = config.database.url ?? postgres.value!.url;
    const temporalAddress = config.temporal.address ?? temporal.value!.address;
    const temporalUiUrl = config.temporal.uiUrl ?? temporal.value?.uiUrl;

    const orm: Database = await openDatabase({ url: databaseUrl, poolMax: config.database.poolMax });
    stack.push({ name: 'database pool', stop: () => orm.close() });
    const applied = await migrate(orm);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
    const workspace = await ensureDefaultWorkspace(orm, config.dataDir);

    const secrets = secretBoxFor(config, { generate: true });
    const legacySeals = await followLegacySealRetirement(orm, secrets, {
      onError: (err) => logger.warn({ err }, 'cannot read whether legacy sealed values are retired'),
    });
    stack.push({ name: 'legacy seal check', stop: async () => legacySeals.stop() });
    const worker = await startWorkerService({
      config,
      orm,
      secrets,
      databaseUrl,
      temporalAddress,
      logger,
      workflowSpans: tracing?.workflowSpans,
    });
    stack.push({ name: 'worker', stop: worker.stop });
    const api: ApiService = await startApiService({
      config,
      orm,
      secrets,
      temporalAddress,
      logger,
      temporalSdkUrl,
      temporalUiUrl,
    });
    stack.push({ name: 'API', stop: api.close });
    writeRuntimeState(config.dataDir, {
      pid: process.pid,
      apiUrl: api.url,
      databaseUrl,
      temporalAddress,
      temporalUiUrl,
    });

    say('');
    say(`Flightdeck is running (started in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
    say(`  API:           ${api.url}/v1   (docs: ${api.url}/docs)`);
    say(`  Metrics:       ${metricsWhere(api)}`);
    say(`  Temporal UI:   ${temporalUiUrl ?? 'not known; set TEMPORAL_UI_URL'}`);
    say(`  Workspace id:  ${workspace.workspaceId}`);
    say(
      workspace.apiKey
        ? `  API key:       ${workspace.apiKey}   (saved in ${workspace.credentialsFile})`
        : `  API key:       not on file; create one with: flightdeck apikey create --workspace ${workspace.workspaceId}`,
    );
    say(
      `  Try:           curl -H "x-api-key: ${workspace.apiKey ?? '<key>'}" ${api.url}/v1/workspaces/${workspace.workspaceId}`,
    );
    say('Press Ctrl-C to stop.');

    const reason = await Promise.race([
      stopSignal,
      worker.done.then(
        () => 'worker stopped',
        (error: unknown) => `worker crashed: ${String(error)}`,
      ),
    ]);
    say(`\nStopping (${reason})...`);
  } catch (error) {
    logger.error({ err: error }, 'start failed');
    process.exitCode = 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await stopAll();
  }
}

function startDependencies(config: Config, say: (line: string) => void) {
  return Promise.allSettled([
    config.database.url
      ? undefined
      : startEmbeddedPostgres({
          dataDir: config.dataDir,
          port: config.database.embeddedPort,
          database: 'flightdeck',
        }),
    config.temporal.address
      ? undefined
      : ensureTemporalCli(say).then((cli) =>
          startTemporalDevServer({
            cliPath: cli.path,
            stateDir: config.dataDir,
            port: config.temporal.embeddedPort,
            uiPort: config.temporal.embeddedUiPort,
            persistent: true,
            namespace: config.temporal.namespace,
          }),
        ),
  ]);
}

/** Where /metrics is served, for the banner. */
function metricsWhere(api: ApiService): string {
  const onApiPort = api.metricsOnApiPort ? `${api.url}/metrics (with the metrics or admin token)` : undefined;
  if (!api.metricsUrl) return onApiPort ?? 'off (FLIGHTDECK_METRICS_PORT=off and no metrics or admin token)';
  return onApiPort ? `${api.metricsUrl}/metrics; ${onApiPort}` : `${api.metricsUrl}/metrics`;
}
