import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from './database';
import type { SecretBox } from './secrets';

/**
 * Values sealed before binding (`fd1:`) carry no owner, so one copied into another record would
 * open there. `flightdeck admin reseal` rewrites them bound and, once none is left to rewrite,
 * records that in the database; from then on every process refuses them: one that starts reads it
 * at once, one already running within a check interval. The record lives with the data, so a
 * database restored from before the reseal opens its legacy values again.
 */

/** When legacy values were retired, if they were. */
export async function legacySealsRetiredAt(em: EntityManager): Promise<Date | undefined> {
  const [row] = await em.execute<{ retired_at: string | Date }[]>(
    'SELECT retired_at FROM legacy_seal_retirement',
  );
  return row ? new Date(row.retired_at) : undefined;
}

export async function retireLegacySeals(em: EntityManager): Promise<void> {
  await em.execute('INSERT INTO legacy_seal_retirement DEFAULT VALUES ON CONFLICT DO NOTHING');
}

/** How often a running process looks whether legacy values were retired. */
export const LEGACY_SEAL_CHECK_MS = 60_000;

/**
 * Makes `box` refuse legacy values once they are retired: looked up now, then every `intervalMs`
 * until they are. A failed lookup (the migration not applied yet) is reported and tried again.
 */
export async function followLegacySealRetirement(
  orm: Database,
  box: SecretBox,
  options: { intervalMs?: number; onError?: (error: unknown) => void } = {},
): Promise<{ stop(): void }> {
  const look = async () => {
    try {
      if (await legacySealsRetiredAt(orm.em.fork() as EntityManager)) box.refuseLegacy();
    } catch (error) {
      options.onError?.(error);
    }
  };
  await look();
  if (box.refusesLegacy) return { stop: () => undefined };
  const timer = setInterval(() => {
    void look().then(() => {
      if (box.refusesLegacy) clearInterval(timer);
    });
  }, options.intervalMs ?? LEGACY_SEAL_CHECK_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
