import { CelQuery } from '../../domain/selectors';
import { route } from '../route';
import { pageResponse, WorkspaceParams } from '../schemas/common';
import { AuditEventPageSchema, AuditEventQuery, toAuditEvent } from '../schemas/auditEvent';

/** The audit trail (docs/behaviour.md "Audit trail"). */
export const auditEventRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/audit-events',
    summary: 'Who changed what, and what the system decided, newest first',
    description:
      'Every write through the API, the CLI and the board, and every decision the system took on its own. ' +
      'Page with `after` (the last id of the previous page); filter with CEL over `event` ' +
      '(`event.action`, `event.actor.type`, `event.record.type`, `event.changes`, …).',
    tags: ['Audit'],
    auth: 'apiKey',
    params: WorkspaceParams,
    query: AuditEventQuery,
    responses: { 200: { description: 'Audit events', schema: AuditEventPageSchema } },
    async handle(ctx, { params, query }) {
      const filter = query.cel ? new CelQuery('event', query.cel) : undefined;
      const page = await ctx.state.stores.audit.list(
        params.workspaceId,
        {
          limit: query.limit,
          ...(query.after ? { after: query.after } : {}),
          ...(query.cursor ? { cursor: query.cursor } : {}),
        },
        filter,
      );
      return { status: 200, body: pageResponse(page, toAuditEvent) };
    },
  }),
];
