import fs from 'node:fs';
import path from 'node:path';
import { searchAttributeRegistrations } from '../../workflows/searchAttributes';
import { assertPortFree, spawnSession, stopLeftover, tail, terminate } from './processes';
import { waitForTemporal } from './temporalReady';
import { run } from '../temporalCli';

export interface TemporalDevServerOptions {
  cliPath: string;
  /** Directory for the pid file and the log; also holds the SQLite file when `persistent`. */
  stateDir: string;
  port: number;
  uiPort?: number;
  /** Keep workflow state in `<stateDir>/temporal.sqlite` across restarts. */
  persistent: boolean;
  namespace: string;
  startTimeoutMs?: number;
  /** Run the server below the default CPU priority (cli/embedded/processes.ts `atNiceness`). */
  niceness?: number;
  /** The server's Go memory limit (`GOMEMLIMIT`), in MiB; none unless given. */
  memoryLimitMb?: number;
}

export interface TemporalDevServer {
  address: string;
  uiUrl?: string;
  pid: number;
  stop(): Promise<void>;
}

const MARKER = 'start-dev';

/**
 * Task queues dispatch by priority, then fairly between fairness keys (worker/orchestrationDispatch.ts
 * sets both): the work a person or an agent waits on — rollouts, leases — goes before a fan-out's
 * backlog, and each deployment's releases get their share of the queue, so one deployment's
 * hundred-thousand releases never hold another's (ARCHITECTURE.md, "Priorities and fairness").
 */
export const TASK_MATCHING_CONFIG: Record<string, boolean> = {
  'matching.useNewMatcher': true,
  'matching.enableFairness': true,
};

/**
 * The dev server configured for throughput, each value chosen by measurement (bench/fanout;
 * ARCHITECTURE.md, "The embedded Temporal server"):
 * - the default rate limits are raised: a fan-out starts thousands of workflows in seconds;
 * - the search-attribute cache is not refreshed on every read (the CLI turns that on, and every
 *   start then re-reads cluster metadata from SQLite);
 * - one task-queue partition: a single server gains nothing from more, and eager starts and
 *   pollers meet in one place;
 * - the history cache holds more executions than a large fan-out leaves open, so their next
 *   task does not reload them from SQLite;
 * - an execution leaves that cache a minute after it entered it once nothing holds it, swept every
 *   15 s: what a fan-out loaded is given back when it goes quiet, and a release woken later reads
 *   its few rows again;
 * - task priorities and fairness (`TASK_MATCHING_CONFIG`).
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Record<string, number | boolean | string | object> = {
  ...TASK_MATCHING_CONFIG,
  'frontend.rps': 10_000,
  'frontend.namespaceRPS': 10_000,
  'system.forceSearchAttributesCacheRefreshOnRead': false,
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  'history.hostLevelCacheMaxSize': 32_768,
  'history.cacheTTL': '1m',
  'history.cacheBackgroundEvict': { Enabled: true, LoopInterval: '15s', MaxEntryPerCall: 1024 },
};

/**
 * The SQLite file in write-ahead-log mode with `synchronous=normal`: a commit is one append to the
 * log, synced at checkpoints. A crash of any process (ours, the server's) loses nothing; a power
 * loss or OS crash may lose the last commits before the checkpoint, never the file's consistency.
 */
export const DEV_SERVER_SQLITE_PRAGMAS = ['journal_mode=wal', 'synchronous=normal'];

/**
 * Starts `temporal server start-dev` with our search attributes registered. The server runs in its
 * own process group so a terminal's Ctrl-C reaches only the parent, which stops children in order.
 */
export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  fs.mkdirSync(options.stateDir, { recursive: true });
  const pidFile = path.join(options.stateDir, 'temporal.pid');
  const logFile = path.join(options.stateDir, 'temporal.log');
  await stopLeftover(pidFile, MARKER);
  const hint =
    'Set FLIGHTDECK_EMBEDDED_TEMPORAL_PORT / FLIGHTDECK_EMBEDDED_TEMPORAL_UI_PORT, or TEMPORAL_ADDRESS.';
  await assertPortFree('127.0.0.1', options.port, hint);
  if (options.uiPort) await assertPortFree('127.0.0.1', options.uiPort, hint);

  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--log-level',
    'warn',
  ];
  if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  else args.push('--headless');
  if (options.persistent) {
    args.push('--db-filename', path.join(options.stateDir, 'temporal.sqlite'));
    for (const pragma of DEV_SERVER_SQLITE_PRAGMAS) args.push('--sqlite-pragma', pragma);
  }
  if (options.namespace !== 'default') args.push('--namespace', options.namespace);
  for (const attribute of searchAttributeRegistrations()) {
    args.push('--search-attribute', `${attribute.name}=${attribute.type}`);
  }
  for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG)) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }

  const log = fs.openSync(logFile, 'a');
  const child = spawnSession(options.cliPath, args, {
    stdio: ['ignore', log, log],
    // Go's runtime reads its memory limit from the environment.
    ...(options.memoryLimitMb === undefined
      ? {}
      : { env: { ...process.env, GOMEMLIMIT: `${options.memoryLimitMb}MiB` } }),
    ...(options.niceness === undefined ? {} : { niceness: options.niceness }),
  });
  fs.closeSync(log);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`Could not start ${options.cliPath}`);
  child.unref();
  fs.writeFileSync(pidFile, String(pid));

  const address = `127.0.0.1:${options.port}`;
  const stop = async () => {
    await terminate(pid);
    fs.rmSync(pidFile, { force: true });
  };
  try {
    await waitUntilServing({
      cliPath: options.cliPath,
      address,
      namespace: options.namespace,
      pid,
      timeoutMs: options.startTimeoutMs ?? 60_000,
      stateDir: options.stateDir,
    });
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n--- ${logFile} ---\n${tail(logFile)}`);
  }
  return { address, uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined, pid, stop };
}

/**
 * Serving means the namespace is there, asked with the CLI the server runs from: a client library
 * here would stay loaded in `start` for as long as the service runs (cli/commands/start.ts). The
 * CLI reads neither the caller's TEMPORAL_* settings (an external cluster's TLS, say) nor their
 * config file's profiles: it asks this server, in plain.
 */
function waitUntilServing(options: {
  cliPath: string;
  address: string;
  namespace: string;
  pid: number;
  timeoutMs: number;
  stateDir: string;
}) {
  const args = ['operator', 'namespace', 'describe', '--namespace', options.namespace];
  args.push('--address', options.address, '--client-connect-timeout', '1s');
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('TEMPORAL_')),
  );
  env.XDG_CONFIG_HOME = options.stateDir;
  return waitForTemporal({
    pid: options.pid,
    what: 'The Temporal dev server',
    timeoutMs: options.timeoutMs,
    pauseMs: 250,
    ready: () => run(options.cliPath, args, { cwd: options.stateDir, env, quiet: true }),
  });
}
