import type { WorkspaceSecret } from '../../application/workspaceSecrets';
import { SECRET_NAME_PATTERN } from '../../domain/secretReferences';
import { iso, pageOf, pageQuery, WorkspaceParams } from './common';
import { z } from './zod';

export const WorkspaceSecretParams = WorkspaceParams.extend({
  name: z
    .string()
    .regex(
      SECRET_NAME_PATTERN,
      'letters, digits, ".", "_" and "-", at most 128, starting with a letter or digit',
    )
    .openapi({ description: 'The name credential fields reference it by, as `secret://<name>`' }),
});

export const WorkspaceSecretBody = z
  .strictObject({
    value: z.string().min(1).max(65_536).openapi({ description: 'The credential; write-only' }),
  })
  .openapi('WorkspaceSecretInput');

export const WorkspaceSecretListQuery = pageQuery();

export const WorkspaceSecretSchema = z
  .object({
    name: z.string(),
    reference: z.string().openapi({
      description: 'What a credential field holds to use it',
      example: 'secret://datadog-api-key',
    }),
    boundTo: z
      .array(z.string().nullable())
      .nullable()
      .openapi({
        description:
          'Where it may be sent: the type, then the endpoints, of the first job agent or metric provider that referenced it; null until one has',
        example: ['datadog', 'datadoghq.com'],
      }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('WorkspaceSecret');

export const WorkspaceSecretPageSchema = pageOf(WorkspaceSecretSchema, 'WorkspaceSecretPage');

export function toWorkspaceSecret(secret: WorkspaceSecret): z.infer<typeof WorkspaceSecretSchema> {
  return {
    name: secret.name,
    reference: `secret://${secret.name}`,
    boundTo: secret.destination === null ? null : (JSON.parse(secret.destination) as (string | null)[]),
    createdAt: iso(secret.createdAt),
    updatedAt: iso(secret.updatedAt),
  };
}
