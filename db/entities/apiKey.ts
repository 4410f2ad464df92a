import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { createdAt, workspaceScoped } from './common';

/** An API key belongs to one workspace. Only its SHA-256 is stored; the key is shown once. */
export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_key',
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    /** The key's first characters, so people can tell their keys apart without the secret. */
    keyPrefix: p.text(),
    keyHash: p.text().unique(),
    /** Set for a key that may act only for this job agent (poll, claim, heartbeat, report its jobs). */
    jobAgentId: p.uuid().nullable(),
    ...createdAt(),
    revokedAt: p.datetime().nullable(),
    /** When the key last authenticated a request, to the minute (ApiKeyStore.authenticate). */
    lastUsedAt: p.datetime().nullable(),
  }),
});
export type ApiKey = InferEntity<typeof ApiKeySchema>;
