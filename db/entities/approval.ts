import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { timestamps, workspaceScoped } from './common';

/**
 * Where an approval's scope stands (db/migrations/Migration0036ApprovalScopes.ts): `pending` until its
 * workflow records the digests of what its targets would ship, `recorded` then; `unbound` for
 * approvals recorded before scopes existed (they no longer count).
 */
export type ApprovalScopeState = 'pending' | 'recorded' | 'unbound';

/** One person's (API key's) approval or rejection of a version in an environment. */
export const ApprovalSchema = defineEntity({
  name: 'Approval',
  tableName: 'approval',
  properties: (p) => ({
    ...workspaceScoped(),
    versionId: p.uuid(),
    environmentId: p.uuid(),
    userId: p.text(),
    userName: p.text(),
    status: p.text().$type<'approved' | 'rejected'>(),
    reason: p.text().nullable(),
    scope: p.text().$type<ApprovalScopeState>().default('unbound'),
    /** This key's decisions on the version there, counted: a scope is recorded only for the latest. */
    decision: p.integer().default(0),
    ...timestamps(),
  }),
});
export type Approval = InferEntity<typeof ApprovalSchema>;
