import type { ApiKey, Workspace } from '../../db/entities';
import type { ApiKeySummary } from '../../application/apiKeys';
import { displayText } from '../../domain/displayText';
import { iso, isoOrNull, Timestamp, WorkspaceParams } from './common';
import { z } from './zod';

export const WorkspaceSchema = z
  .object({ id: z.uuid(), name: z.string(), slug: z.string(), createdAt: Timestamp })
  .openapi('Workspace');

/** Ctrlplane's list of workspaces. */
export const WorkspaceListSchema = z
  .object({ workspaces: z.array(WorkspaceSchema), total: z.number().int() })
  .openapi('WorkspaceList');

const WorkspaceName = displayText(z.string().trim().min(1).max(200), 'single');
const WorkspaceSlug = displayText(
  z
    .string()
    .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'lowercase letters, digits and single hyphens')
    .max(63),
  'single',
);

export const CreateWorkspaceBody = z
  .object({ name: WorkspaceName, slug: WorkspaceSlug.optional() })
  .openapi('CreateWorkspace');

export const UpdateWorkspaceBody = z
  .object({ name: WorkspaceName.optional(), slug: WorkspaceSlug.optional() })
  .openapi('UpdateWorkspace');

export const WorkspaceSlugParams = z.object({ workspaceSlug: WorkspaceSlug });

export const CreateApiKeyBody = z
  .object({
    name: WorkspaceName,
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

export const CreatedWorkspaceSchema = WorkspaceSchema.extend({
  apiKey: IssuedApiKeySchema.openapi({
    description: "The workspace's first API key: its secret (`key`) is shown in this response only",
  }),
}).openapi('CreatedWorkspace');

export const ApiKeyParams = WorkspaceParams.extend({ apiKeyId: z.uuid() });

/** A key as listed: never the key or its hash. */
export const ApiKeySummarySchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    prefix: z.string().openapi({ description: "The key's first characters, to tell keys apart" }),
    jobAgentId: z.uuid().nullable(),
    createdAt: Timestamp,
    lastUsedAt: Timestamp.nullable().openapi({
      description: 'When the key last authenticated a request (to the minute); null if never',
    }),
    revokedAt: Timestamp.nullable(),
  })
  .openapi('ApiKey');

export function toWorkspace(workspace: Workspace): z.infer<typeof WorkspaceSchema> {
  return {
    id: workspace.id,
    name: workspace.name,
    slug: workspace.slug,
    createdAt: iso(workspace.createdAt),
  };
}

export function toApiKeySummary(record: ApiKeySummary): z.infer<typeof ApiKeySummarySchema> {
  return {
    id: record.id,
    workspaceId: record.workspaceId,
    name: record.name,
    prefix: record.keyPrefix,
    jobAgentId: record.jobAgentId ?? null,
    createdAt: iso(record.createdAt),
    lastUsedAt: isoOrNull(record.lastUsedAt),
    revokedAt: isoOrNull(record.revokedAt),
  };
}

/** A key just issued: what a summary shows of it, and the key itself, this once. */
export function toIssuedApiKey(record: ApiKey, key: string): z.infer<typeof IssuedApiKeySchema> {
  const { lastUsedAt: _lastUsed, revokedAt: _revoked, ...shown } = toApiKeySummary(record);
  return { ...shown, key };
}
