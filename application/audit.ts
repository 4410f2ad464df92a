import type { EntityManager } from '@mikro-orm/postgresql';
import type { AuditEventInput } from '../domain/audit';
import { boundedTotal, type BoundedPage } from '../domain/pagination';
import type { CelQuery } from '../domain/selectors';
import { recordAuditEvents, SYSTEM_ORIGIN, type AuditOrigin } from '../db/audit';
import { AuditEventSchema, type AuditEvent } from '../db/entities';
import { listFiltered } from './common';

/** An unfiltered page counts up to this many events (past it the page says `totalAtLeast`). */
const COUNT_LIMIT = 10_000;

export interface AuditPageRequest {
  limit: number;
  /** The id of the last event of the previous page: this page holds older ones. */
  after?: string;
  /** A filtered page's `nextCursor`: where the reading of the previous one stopped. */
  cursor?: string;
}

/** The millisecond a UUID version 7 was made at (the first 48 bits). */
function idTime(id: string): Date {
  return new Date(parseInt(id.replace(/-/g, '').slice(0, 12), 16));
}

/** The audit trail as the API reads and writes it (domain/audit.ts). */
export class AuditStore {
  constructor(
    private readonly em: EntityManager,
    /** Who the request acts as: the events it records are theirs. */
    private readonly origin: AuditOrigin = SYSTEM_ORIGIN,
  ) {}

  record(events: readonly AuditEventInput[]): Promise<void> {
    return recordAuditEvents(this.em, events, this.origin);
  }

  /** Newest first, after a cursor; with a CEL filter over `event`, as every filtered list reads. */
  async list(
    workspaceId: string,
    request: AuditPageRequest,
    filter?: CelQuery<'event'>,
  ): Promise<BoundedPage<AuditEvent>> {
    const where = {
      workspaceId,
      ...(request.after ? { createdAt: { $lte: idTime(request.after) }, id: { $lt: request.after } } : {}),
    };
    const page = { limit: request.limit, offset: 0, cursor: request.cursor };
    // A cursor without a filter goes there too, to be refused as every filtered list refuses it.
    if (filter || request.cursor !== undefined)
      return listFiltered(this.em, workspaceId, AuditEventSchema, where, page, filter, 'desc');
    const items = await this.em.find(AuditEventSchema, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: request.limit,
      disableIdentityMap: true,
    });
    const [counted] = await this.em
      .getConnection()
      .execute<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM (SELECT 1 FROM audit_event WHERE workspace_id = ?${
          request.after ? ' AND created_at <= ? AND id < ?' : ''
        } LIMIT ${COUNT_LIMIT}) counted`,
        request.after ? [workspaceId, idTime(request.after), request.after] : [workspaceId],
      );
    return { items, ...boundedTotal(counted?.n ?? 0, COUNT_LIMIT), limit: request.limit, offset: 0 };
  }

  /** A deployment's newest events: its board's timeline. */
  timeline(workspaceId: string, deploymentId: string, limit: number): Promise<AuditEvent[]> {
    return this.em.find(
      AuditEventSchema,
      { workspaceId, deploymentId },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit, disableIdentityMap: true },
    );
  }
}
