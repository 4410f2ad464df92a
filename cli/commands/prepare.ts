import { migrate, openDatabase } from '../../db/database';
import { ensureDefaultWorkspace } from '../bootstrap';
import type { Config } from '../config';
import { createLogger } from '../logger';
import { reportReady } from './roleProcess';

/**
 * `flightdeck prepare`, which `flightdeck start` runs once before the API and the worker:
 * migrations and the default workspace, reported to the start process, then exit. In a process of
 * its own so that the start process, which then only watches its children for as long as the
 * service runs, never loads the ORM.
 */
export async function prepareCommand(config: Config): Promise<void> {
  if (!config.database.url) throw new Error('DATABASE_URL must be set (`flightdeck start` sets it).');
  const logger = createLogger(config.logLevel);
  const orm = await openDatabase({ url: config.database.url, poolMax: 2 });
  try {
    const applied = await migrate(orm);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
    reportReady({ role: 'prepare', workspace: await ensureDefaultWorkspace(orm, config.dataDir) });
  } finally {
    await orm.close();
  }
}
