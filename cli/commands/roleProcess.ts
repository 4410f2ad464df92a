import type { Logger } from 'pino';
import { openDatabase, type Database } from '../../db/database';
import { followLegacySealRetirement } from '../../db/legacySeals';
import type { SecretBox } from '../../db/secrets';
import type { Config } from '../config';
import type { RoleReady } from '../embedded/roles';
import { secretBoxFor } from '../state';

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

/**
 * A role's database: its pool, the secret box, and the watch on legacy sealed values' retirement
 * (db/legacySeals.ts); `close` ends the watch, then the pool.
 */
export async function openRoleDatabase(
  config: Config,
  databaseUrl: string,
  logger: Logger,
): Promise<{ orm: Database; secrets: SecretBox; close(): Promise<void> }> {
  const secrets = secretBoxFor(config, { generate: false });
  const orm = await openDatabase({ url: databaseUrl, poolMax: config.database.poolMax });
  const legacySeals = await followLegacySealRetirement(orm, secrets, {
    onError: (err) => logger.warn({ err }, 'cannot read whether legacy sealed values are retired'),
  });
  return {
    orm,
    secrets,
    close: async () => {
      legacySeals.stop();
      await orm.close();
    },
  };
}
