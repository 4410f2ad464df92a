import type { ApiKey, Workspace } from '../../db/entities';
import { iso, Timestamp } from './common';
import { z } from './zod';

export const WorkspaceSchema = z
  .object({ id: z.uuid(), name: z.string(), slug: z.string(), createdAt: Timestamp })
  .openapi('Workspace');

export const CreateWorkspaceBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    slug: z
      .string()
      .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'lowercase letters, digits and single hyphens')
      .max(63)
      .optional(),
  })
  .openapi('CreateWorkspace');

export const CreateApiKeyBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    jobAgentId: z
      .uuid()
      .optional()
      .openapi({ description: 'Scope the key to one job agent (pull endpoints only)' }),
  })
  .openapi('CreateApiKey');

export const IssuedApiKeySchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    prefix: z.string(),
    jobAgentId: z.uuid().nullable(),
    key: z.string().openapi({ description: 'The secret. Shown in this response only; store it now.' }),
    createdAt: Timestamp,
  })
  .openapi('IssuedApiKey');

export function toWorkspace(workspace: Workspace): z.infer<typeof WorkspaceSchema> {
  return {
    id: workspace.id,
    name: workspace.name,
    slug: workspace.slug,
    createdAt: iso(workspace.createdAt),
  };
}

export function toIssuedApiKey(record: ApiKey, key: string): z.infer<typeof IssuedApiKeySchema> {
  return {
    id: record.id,
    workspaceId: record.workspaceId,
    name: record.name,
    prefix: record.keyPrefix,
    jobAgentId: record.jobAgentId ?? null,
    key,
    createdAt: iso(record.createdAt),
  };
}
