import type { EntityManager } from '@mikro-orm/postgresql';

/** The tables a fan-out's batches read by key and join (ARCHITECTURE.md, "Fan-out"). */
const FANOUT_TABLES = ['resource', 'release_target', 'release_target_state', 'release', 'job'] as const;

/**
 * Analyzes those of the fan-out's tables whose planner statistics lag far behind their rows, by
 * autovacuum's own measure with a larger floor. Autovacuum looks once a minute: an inventory synced
 * seconds before a version left these tables never analyzed, and on default estimates a batch's
 * facts read ran the 20,000-target fan-out at 250 jobs a second instead of 850. Returns the tables
 * analyzed.
 */
export async function refreshStaleStatistics(em: EntityManager): Promise<string[]> {
  const stale = await em.execute<{ relname: string }[]>(
    `SELECT relname FROM pg_stat_user_tables
      WHERE schemaname = current_schema() AND relname = ANY(?::text[])
        AND n_mod_since_analyze > 1000 + 0.1 * n_live_tup`,
    [`{${FANOUT_TABLES.join(',')}}`],
  );
  const staleNames = new Set(stale.map((row) => row.relname));
  // Only our own constant's names reach the statement, quoted.
  const tables = FANOUT_TABLES.filter((table) => staleNames.has(table));
  if (tables.length > 0) await em.execute(`ANALYZE ${tables.map((table) => `"${table}"`).join(', ')}`);
  return tables;
}
