import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKeySchema, JobAgentSchema, WorkspaceSchema, type ApiKey } from '../entities';
import { NotFoundError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { newId } from '../ids';

const KEY_PREFIX = 'fdk_';

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export interface IssuedApiKey {
  record: ApiKey;
  /** The secret itself: returned once, never stored. */
  key: string;
}

export class ApiKeyStore {
  constructor(private readonly em: EntityManager) {}

  /** A key for the workspace, or (with `jobAgentId`) one that may act only for that job agent. */
  async create(input: { workspaceId: string; name: string; jobAgentId?: string }): Promise<IssuedApiKey> {
    const workspace = await this.em.findOne(WorkspaceSchema, { id: input.workspaceId });
    if (!workspace) throw new NotFoundError('workspace', input.workspaceId);
    if (input.jobAgentId) {
      const agent = await this.em.findOne(JobAgentSchema, {
        id: input.jobAgentId,
        workspaceId: input.workspaceId,
      });
      if (!agent) throw new NotFoundError('job agent', input.jobAgentId);
    }
    // 240 random bits: a plain SHA-256 is enough to store it, no password hashing needed.
    const key = `${KEY_PREFIX}${randomBytes(30).toString('base64url')}`;
    const record = this.em.create(ApiKeySchema, {
      id: newId(),
      workspaceId: input.workspaceId,
      name: input.name,
      keyPrefix: key.slice(0, 12),
      keyHash: hashApiKey(key),
      jobAgentId: input.jobAgentId ?? null,
      revokedAt: null,
    });
    await this.em.flush();
    return { record, key };
  }

  /** Runs on every request: one indexed lookup, without entity hydration. */
  async authenticate(key: string): Promise<Principal | undefined> {
    if (!key.startsWith(KEY_PREFIX) || key.length > 200) return undefined;
    const [row] = await this.em
      .getConnection()
      .execute<{ id: string; workspace_id: string; job_agent_id: string | null }[]>(
        'SELECT id, workspace_id, job_agent_id FROM api_key WHERE key_hash = ? AND revoked_at IS NULL',
        [hashApiKey(key)],
      );
    return row
      ? { kind: 'apiKey', workspaceId: row.workspace_id, apiKeyId: row.id, jobAgentId: row.job_agent_id }
      : undefined;
  }
}
