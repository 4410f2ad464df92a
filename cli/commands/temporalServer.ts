import path from 'node:path';
import type { Config } from '../config';
import { startGuardian } from '../embedded/guardian';
import { isAlive, tail } from '../embedded/processes';
import { postgresFromUrl, startFullTemporalServer } from '../temporalFull';

export interface TemporalServerCommandOptions {
  databaseUrl?: string;
  port: number;
  ip: string;
  dataDir?: string;
  shards: number;
}

/** Used when neither --database-url nor TEMPORAL_DATABASE_URL is given: the local server, trust auth. */
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/temporal';

/**
 * `flightdeck temporal server`: a full Temporal server on PostgreSQL in the foreground, until
 * SIGINT or SIGTERM. It prints the address to use as TEMPORAL_ADDRESS.
 */
export async function temporalServerCommand(
  config: Config,
  options: TemporalServerCommandOptions,
): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const databaseUrl = options.databaseUrl ?? process.env.TEMPORAL_DATABASE_URL ?? DEFAULT_DATABASE_URL;
  const started = Date.now();
  const server = await startFullTemporalServer({
    ...postgresFromUrl(databaseUrl),
    frontendPort: options.port,
    host: options.ip,
    dataDir: path.resolve(options.dataDir ?? path.join(config.dataDir, 'temporal-server')),
    namespace: config.temporal.namespace,
    numHistoryShards: options.shards,
    log,
  });
  // If this process is killed (even with kill -9), the watchdog still stops the server.
  const guardian = startGuardian();
  guardian.watch({ pid: server.pid });
  process.stdout.write(
    `Temporal server ${server.address} (namespace ${server.namespace}) ready in ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s\n  log: ${server.logFile}\n` +
      `  use: TEMPORAL_ADDRESS=${server.address}\n`,
  );
  // Watching the server also keeps this process alive: signal handlers alone do not.
  let watch: NodeJS.Timeout | undefined;
  const reason = await new Promise<'signal' | 'exited'>((resolve) => {
    process.once('SIGINT', () => resolve('signal'));
    process.once('SIGTERM', () => resolve('signal'));
    watch = setInterval(() => {
      if (!isAlive(server.pid)) resolve('exited');
    }, 1000);
  });
  clearInterval(watch);
  if (reason === 'signal') {
    log('Stopping the Temporal server...');
    await server.stop();
  }
  guardian.release();
  if (reason === 'exited') {
    throw new Error(`The Temporal server exited; see ${server.logFile}:\n${tail(server.logFile)}`);
  }
}
