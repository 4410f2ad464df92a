import type { StoreFactory } from '../../application';
import { apiStores, startApiService } from '../../cli/apiService';
import { openRoleDatabase, requiredAddresses } from '../../cli/commands/roleProcess';
import { loadConfig } from '../../cli/config';
import { createLogger } from '../../cli/logger';

/**
 * The API as `flightdeck api` serves it, its stores wrapped with a fault: a process that dies on
 * purpose at a named moment, so a test can prove that a crash then loses nothing and leaves nothing
 * behind (test/integration/pull/faults.test.ts). Run from source, configured by the environment as
 * the CLI is: `node --import tsx test/helpers/faultyApi.ts <fault>`.
 */

const FAULTS = {
  /** The process dies (SIGKILL) right after a claim committed, before it answers. */
  'claim.exit-after-commit': killedAfterClaim,
} satisfies Record<string, (stores: StoreFactory) => StoreFactory>;

function killedAfterClaim(real: StoreFactory): StoreFactory {
  return (origin) => {
    const stores = real(origin);
    const { pull } = stores;
    const claim = pull.claim.bind(pull);
    pull.claim = async (...args) => {
      await claim(...args);
      process.kill(process.pid, 'SIGKILL');
      throw new Error('unreachable: the process was killed');
    };
    return stores;
  };
}

async function serveWithFault(fault: string | undefined): Promise<void> {
  if (!fault || !(fault in FAULTS)) {
    throw new Error(`Name a fault among ${Object.keys(FAULTS).join(', ')}`);
  }
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const { databaseUrl, temporalAddress } = requiredAddresses(config);
  const { orm, secrets } = await openRoleDatabase(config, databaseUrl, logger);
  await startApiService({
    config,
    orm,
    secrets,
    temporalAddress,
    logger,
    stores: FAULTS[fault as keyof typeof FAULTS](apiStores(config, orm, secrets)),
  });
}

serveWithFault(process.argv[2]).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
