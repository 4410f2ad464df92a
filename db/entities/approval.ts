import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { timestamps, workspaceScoped } from './common';

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
    ...timestamps(),
  }),
});
export type Approval = InferEntity<typeof ApprovalSchema>;
