import type { Config } from '../config';
import type { RoleReady } from '../embedded/roles';

/**
 * What `flightdeck api` and `flightdeck worker` share: one role per process, for running several of
 * each. Each role's command is a module of its own (cli/commands/api.ts, worker.ts), so a process
 * loads only its role's code.
 */

export function requiredAddresses(config: Config): { databaseUrl: string; temporalAddress: string } {
  const missing = [
    config.database.url ? undefined : 'DATABASE_URL',
    config.temporal.address ? undefined : 'TEMPORAL_ADDRESS',
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new Error(
      `${missing.join(' and ')} must be set (use \`flightdeck start\` for the embedded stack).`,
    );
  }
  return { databaseUrl: config.database.url!, temporalAddress: config.temporal.address! };
}

export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}

/**
 * When `flightdeck start` runs this process (cli/embedded/roles.ts), tells it that the role serves,
 * then closes the channel, which would otherwise keep the process alive after its stop.
 */
export function reportReady(ready: RoleReady): void {
  if (process.send && process.connected) process.send(ready, undefined, {}, () => process.disconnect?.());
}
