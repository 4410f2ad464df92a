import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Database } from '../db/database';
import { purgeExpiredAuditEvents } from '../db/audit';

const PURGE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Keeps the audit trail and the webhook delivery log to their retention (FLIGHTDECK_AUDIT_RETENTION_DAYS):
 * a purge when the worker starts, then every hour. Several workers purging at once only share the work.
 */
export function startAuditRetention(
  orm: Database,
  retentionDays: number,
  logger: Logger,
): () => Promise<void> {
  let running: Promise<void> = Promise.resolve();
  const purge = () => {
    running = purgeExpiredAuditEvents(orm.em.fork() as EntityManager, retentionDays)
      .then((purged) => {
        if (purged > 0) logger.info({ purged, retentionDays }, 'purged audit events past their retention');
      })
      .catch((error: unknown) =>
        logger.warn({ err: error }, 'the audit purge failed; it runs again within the hour'),
      );
  };
  purge();
  const timer = setInterval(purge, PURGE_INTERVAL_MS).unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
