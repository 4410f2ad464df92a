import fs from 'node:fs';
import type { Logger } from 'pino';
import type { DefaultWorkspace } from '../bootstrap';
import type { Config } from '../config';
import { startGuardian, type Guardian } from '../embedded/guardian';
import { startEmbeddedPostgres } from '../embedded/postgres';
import { BACKGROUND_NICENESS, freePort } from '../embedded/processes';
import { spawnRole, type RoleProcess } from '../embedded/roles';
import { startTemporalDevServer } from '../embedded/temporalServer';
import { createLogger } from '../logger';
import { acquireStartLock, clearRuntimeState, secretKeyFor, writeRuntimeState } from '../state';
import { ensureOpa } from '../opa';
import { ensureTemporalCli } from '../temporalCli';
import { WORKER_SEMI_SPACE_MB, workerMallocEnv } from '../../worker/tuning';
import type { ApiReady } from './api';

/** How long the worker may take to stop after SIGTERM before it is killed. */
const WORKER_GRACE_MS = 30_000;
/** A migration is one transaction: stopped, it rolls back. */
const PREPARE_GRACE_MS = 5_000;
/** How long the guardian gives Temporal, and PostgreSQL's fast shutdown, if this process dies. */
const TEMPORAL_GRACE_MS = 10_000;
const POSTGRES_GRACE_MS = 30_000;

/**
 * `flightdeck start`: the whole service in one command. PostgreSQL and Temporal are started here
 * unless DATABASE_URL / TEMPORAL_ADDRESS point at running ones; then migrations, the worker
 * (`flightdeck worker`) in a process of its own at the background's priority, and the API in this
 * process, which has nothing else to do once everything runs. Ctrl-C (or SIGTERM) stops everything in
 * reverse order; if the worker dies, everything stops and the command exits with 1 (nothing is
 * restarted behind the operator's back).
 */
export async function startCommand(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel);
  const say = (line: string) => process.stdout.write(`${line}\n`);
  fs.mkdirSync(config.dataDir, { recursive: true });
  const releaseLock = acquireStartLock(config.dataDir);
  const guardian = startGuardian();
  const stack: StackPart[] = [];
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
  // The API's code loads while PostgreSQL and Temporal start.
  const apiModule = import('./api.js');
  apiModule.catch(() => undefined);

  try {
    const started = Date.now();
    const dependencies = await startDependencies(config, say);
    keepDependencies(stack, guardian, dependencies);
    const [postgres, temporal] = dependencies;
    const temporalPid = temporal.status === 'fulfilled' ? temporal.value?.pid : undefined;
    if (postgres.status === 'rejected') throw postgres.reason;
    if (temporal.status === 'rejected') throw temporal.reason;

    // Plan validation rules need `opa`: found in the cache, or built once; without it they answer 503.
    await ensureOpa(say).catch((error: unknown) =>
      say(`Plan validation (OPA) is unavailable: ${(error as Error).message}`),
    );

    const where = await stackAddresses(config, postgres.value, temporal.value);
    const workspace = await prepareDatabase(where.databaseUrl, config);

    const worker = spawnWorker(config, where);
    stack.push({ name: 'worker', stop: worker.stop });
    guardian.watch({ pid: worker.pid, graceMs: WORKER_GRACE_MS });
    const api = (await apiModule).serveApi(apiConfig(config, where), logger);
    // An API that failed to start has nothing to close; its error is the start's.
    stack.push({ name: 'API', stop: async () => (await api.catch(() => undefined))?.close() });

    const serving = await Promise.race([Promise.all([api, worker.ready]), stopSignal]);
    if (typeof serving === 'string') {
      say(`\nStopping (${serving})...`);
      return;
    }
    const [{ ready: apiReady }] = serving;
    writeRuntimeState(config.dataDir, {
      pid: process.pid,
      apiUrl: apiReady.url,
      databaseUrl: where.databaseUrl,
      temporalAddress: where.temporalAddress,
      temporalUiUrl: where.temporalUiUrl,
      processes: { api: process.pid, worker: worker.pid, ...(temporalPid ? { temporal: temporalPid } : {}) },
    });
    printBanner(say, { started, api: apiReady, temporalUiUrl: where.temporalUiUrl, workspace });

    say(`\nStopping (${await untilStopped(stopSignal, worker, logger)})...`);
  } catch (error) {
    logger.error({ err: error }, 'start failed');
    process.exitCode = 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await stopAll();
  }
}

/** What `startCommand` stops, last started first. */
type StackPart = { name: string; stop: () => Promise<void> };

/** PostgreSQL and Temporal as started here (none when given by address): stopped last, and watched by the guardian. */
function keepDependencies(
  stack: StackPart[],
  guardian: Guardian,
  [postgres, temporal]: Awaited<ReturnType<typeof startDependencies>>,
): void {
  if (postgres.status === 'fulfilled' && postgres.value) {
    stack.push({ name: 'PostgreSQL', stop: postgres.value.stop });
    guardian.watch({ pid: postgres.value.pid, signal: 'INT', graceMs: POSTGRES_GRACE_MS });
  }
  if (temporal.status === 'fulfilled' && temporal.value) {
    stack.push({ name: 'Temporal', stop: temporal.value.stop });
    guardian.watch({ pid: temporal.value.pid, graceMs: TEMPORAL_GRACE_MS });
  }
}

/**
 * Until Ctrl-C or SIGTERM, or until the worker dies: then everything stops and the command exits
 * with 1 (nothing is restarted behind the operator's back). Says why it stops.
 */
async function untilStopped(
  stopSignal: Promise<string>,
  worker: RoleProcess<'worker'>,
  logger: Logger,
): Promise<string> {
  const reason = await Promise.race([stopSignal, worker.exited.then((how) => ({ how }))]);
  if (typeof reason === 'string') return reason;
  logger.error(reason, 'the worker process exited unexpectedly; stopping everything');
  process.exitCode = 1;
  return `the worker exited: ${reason.how}`;
}

interface StackAddresses {
  databaseUrl: string;
  temporalAddress: string;
  temporalUiUrl?: string;
  secretKey: string;
  /** The worker's metrics listener, whose figures the API's /metrics joins to its own. */
  workerMetricsUrl: string;
}

/** `flightdeck worker` at the background's priority, with its own heap and malloc settings. */
/** Where the processes find each other: what the configuration names, else what was started here. */
async function stackAddresses(
  config: Config,
  postgres: { url: string } | undefined,
  temporal: { address: string; uiUrl?: string } | undefined,
): Promise<StackAddresses> {
  return {
    databaseUrl: config.database.url ?? postgres!.url,
    temporalAddress: config.temporal.address ?? temporal!.address,
    temporalUiUrl: config.temporal.uiUrl ?? temporal?.uiUrl,
    secretKey: secretKeyFor(config, { generate: true }),
    workerMetricsUrl: `http://127.0.0.1:${await freePort()}`,
  };
}

function spawnWorker(config: Config, where: StackAddresses): RoleProcess<'worker'> {
  return spawnRole('worker', {
    env: {
      ...process.env,
      // As `npm start` and the image run it (docs/operations.md "Scaling"), unless told otherwise.
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
      ...workerMallocEnv(process.env),
      FLIGHTDECK_DATA_DIR: config.dataDir,
      DATABASE_URL: where.databaseUrl,
      TEMPORAL_ADDRESS: where.temporalAddress,
      FLIGHTDECK_SECRET_KEY: where.secretKey,
      FLIGHTDECK_METRICS_HOST: '127.0.0.1',
      FLIGHTDECK_METRICS_PORT: new URL(where.workerMetricsUrl).port,
    },
    niceness: BACKGROUND_NICENESS,
    graceMs: WORKER_GRACE_MS,
    heapMb: config.worker.heapMb,
    semiSpaceMb: WORKER_SEMI_SPACE_MB,
  });
}

/** The API's configuration: this command's, with the addresses and the key of the stack it started. */
function apiConfig(config: Config, where: StackAddresses): Config {
  return {
    ...config,
    secretKey: where.secretKey,
    database: { ...config.database, url: where.databaseUrl },
    temporal: { ...config.temporal, address: where.temporalAddress, uiUrl: where.temporalUiUrl },
    api: { ...config.api, metrics: { ...config.api.metrics, workerUrl: where.workerMetricsUrl } },
  };
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
            niceness: BACKGROUND_NICENESS,
            memoryLimitMb: config.temporal.embeddedMemoryMb,
          }),
        ),
  ]);
}

/**
 * Migrations and the default workspace, before the API and the worker start: `flightdeck prepare`
 * in a process of its own, so this one never loads the ORM (cli/commands/prepare.ts).
 */
async function prepareDatabase(databaseUrl: string, config: Config): Promise<DefaultWorkspace> {
  const prepare = spawnRole('prepare', {
    env: { ...process.env, FLIGHTDECK_DATA_DIR: config.dataDir, DATABASE_URL: databaseUrl },
    graceMs: PREPARE_GRACE_MS,
  });
  const { workspace } = await prepare.ready.catch(async (error: unknown) => {
    await prepare.stop();
    throw error;
  });
  await prepare.exited;
  return workspace;
}

function printBanner(
  say: (line: string) => void,
  options: {
    started: number;
    api: ApiReady;
    temporalUiUrl?: string;
    workspace: DefaultWorkspace;
  },
): void {
  const { api, workspace } = options;
  say('');
  say(`Flightdeck is running (started in ${((Date.now() - options.started) / 1000).toFixed(1)} s)`);
  say(`  API:           ${api.url}/v1   (docs: ${api.url}/docs)`);
  say(`  Metrics:       ${metricsWhere(api)}`);
  say(`  Temporal UI:   ${options.temporalUiUrl ?? 'not known; set TEMPORAL_UI_URL'}`);
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
}

/** Where /metrics is served, for the banner. */
function metricsWhere(api: ApiReady): string {
  const onApiPort = api.metricsOnApiPort ? `${api.url}/metrics (with the metrics or admin token)` : undefined;
  if (!api.metricsUrl) return onApiPort ?? 'off (FLIGHTDECK_METRICS_PORT=off and no metrics or admin token)';
  return onApiPort ? `${api.metricsUrl}/metrics; ${onApiPort}` : `${api.metricsUrl}/metrics`;
}
