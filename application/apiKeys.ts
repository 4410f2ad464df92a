import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKeySchema, JobAgentSchema, WorkspaceSchema, type ApiKey } from '../db/entities';
import { NotFoundError } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import type { Principal } from '../domain/principal';
import { newId } from '../db/ids';
import { preparedStatement, runPrepared } from '../db/preparedStatements';
import { listPage } from './common';

const KEY_PREFIX = 'fdk_';

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export interface IssuedApiKey {
  record: ApiKey;
  /** The secret itself: returned once, never stored. */
  key: string;
}

/** What may be shown of a key after it was issued: never its hash, never the key. */
export type ApiKeySummary = Omit<ApiKey, 'keyHash'>;

function summary({ keyHash: _hash, ...shown }: ApiKey): ApiKeySummary {
  return shown;
}

/** Last use is recorded at most this often per key, so a busy key does not write on every request. */
const LAST_USED_RESOLUTION = "interval '60 seconds'";

/**
 * What authentication reads of an unrevoked key (table `api_key`), whatever presents it: the key
 * itself, or a board session bound to it (application/boardSessions.ts).
 */
export const AUTHENTICATED_KEY_COLUMNS = `api_key.id, api_key.workspace_id, api_key.job_agent_id, api_key.name,
  (api_key.last_used_at IS NULL OR api_key.last_used_at < now() - ${LAST_USED_RESOLUTION}) AS stale`;

export interface AuthenticatedKeyRow {
  id: string;
  workspace_id: string;
  job_agent_id: string | null;
  name: string;
  /** Whether the last use recorded is older than LAST_USED_RESOLUTION. */
  stale: boolean;
}

const AUTHENTICATE = preparedStatement(
  'authenticate_api_key',
  `SELECT ${AUTHENTICATED_KEY_COLUMNS} FROM api_key WHERE key_hash = $1 AND revoked_at IS NULL`,
);

/** Who a key that authenticated a request is; its last use written when the one recorded is stale. */
export async function authenticatedKey(em: EntityManager, row: AuthenticatedKeyRow): Promise<Principal> {
  if (row.stale) await recordUse(em, row.id);
  return {
    kind: 'apiKey',
    workspaceId: row.workspace_id,
    apiKeyId: row.id,
    keyName: row.name,
    jobAgentId: row.job_agent_id,
  };
}

/**
 * Best effort: the condition is checked again under the row lock, so concurrent requests write it
 * once; a failure (a lock timeout, a read-only replica) never fails the request it serves.
 */
async function recordUse(em: EntityManager, id: string): Promise<void> {
  try {
    await em.getConnection().execute(
      `UPDATE api_key SET last_used_at = now()
          WHERE id = ? AND (last_used_at IS NULL OR last_used_at < now() - ${LAST_USED_RESOLUTION})`,
      [id],
      'run',
    );
  } catch {
    // The last use is informational; authentication has already succeeded.
  }
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
      lastUsedAt: null,
    });
    await this.em.flush();
    return { record, key };
  }

  /** The workspace's keys, revoked ones included, oldest first. */
  async list(workspaceId: string, page: PageRequest): Promise<Page<ApiKeySummary>> {
    await this.assertWorkspace(workspaceId);
    const found = await listPage(this.em, ApiKeySchema, { workspaceId }, page);
    return { ...found, items: found.items.map(summary) };
  }

  /**
   * Revokes a key of the workspace: it stops authenticating at once (`authenticate` reads
   * `revoked_at` on every request), and so do the board sessions it signed in (their lookup reads it
   * too). Revoking a revoked key keeps its first `revokedAt`.
   */
  async revoke(workspaceId: string, id: string): Promise<ApiKeySummary> {
    const record = await this.em.findOne(ApiKeySchema, { id, workspaceId });
    if (!record) throw new NotFoundError('API key', id);
    if (!record.revokedAt) {
      record.revokedAt = new Date();
      await this.em.flush();
    }
    return summary(record);
  }

  /**
   * Runs on every request: one indexed lookup, without entity hydration. The key's last use is
   * written only when the one recorded is older than a minute, by a second, conditional statement.
   */
  async authenticate(key: string): Promise<Principal | undefined> {
    if (!key.startsWith(KEY_PREFIX) || key.length > 200) return undefined;
    const [row] = await runPrepared<AuthenticatedKeyRow>(this.em, AUTHENTICATE, [hashApiKey(key)]);
    return row && authenticatedKey(this.em, row);
  }

  private async assertWorkspace(workspaceId: string): Promise<void> {
    const workspace = await this.em.findOne(WorkspaceSchema, { id: workspaceId }, { fields: ['id'] });
    if (!workspace) throw new NotFoundError('workspace', workspaceId);
  }
}
