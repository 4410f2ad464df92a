import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import { newId } from '../db/ids';
import type { SecretRow } from '../db/secretReferences';
import type { SecretBox } from '../db/secrets';

/** Secrets a workspace may hold. */
export const MAX_SECRETS_PER_WORKSPACE = 1000;

/** A workspace secret as answered: never its value. */
export interface WorkspaceSecret {
  name: string;
  /** Where the secret may be sent (domain/credentialBinding.ts), once a referencing record bound it. */
  destination: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const shown = (row: SecretRow): WorkspaceSecret => ({
  name: row.name,
  destination: row.destination,
  createdAt: new Date(row.created_at),
  updatedAt: new Date(row.updated_at),
});

/**
 * Workspace secrets (docs/security.md "Workspace secrets"): values sealed to their names, written and
 * replaced by name, never answered. Credential fields reference them as `secret://<name>`. A secret is bound
 * to the destination of the first job agent or metric provider that references it; writing its
 * value again keeps that binding (a rotation), and only deleting it releases it, so a key that can
 * edit records but not read secrets cannot send one somewhere else.
 */
export class WorkspaceSecretStore {
  constructor(
    private readonly em: EntityManager,
    private readonly box: SecretBox,
  ) {}

  /** Creates the secret or replaces its value; `created` says which. */
  async put(
    workspaceId: string,
    name: string,
    value: string,
  ): Promise<WorkspaceSecret & { created: boolean }> {
    const [counted] = await this.em.execute<{ n: number; named: boolean }[]>(
      `SELECT count(*)::int AS n, bool_or(name = ?) AS named FROM workspace_secret WHERE workspace_id = ?`,
      [name, workspaceId],
    );
    const n = counted?.n ?? 0;
    if (!counted?.named && n >= MAX_SECRETS_PER_WORKSPACE)
      throw new ConflictError(
        `The workspace has ${n} secrets, the most it may have; delete one first`,
        'too_many_secrets',
      );
    // Sealed to its name, its identity within the workspace: one statement creates or replaces it,
    // so two writers of a new name race to a replacement, never to a unique violation.
    const sealed = this.box.forRecord(workspaceId, 'workspace_secret', name).seal(value);
    const [row] = await this.em.execute<(SecretRow & { created: boolean })[]>(
      `INSERT INTO workspace_secret (id, workspace_id, name, value) VALUES (?, ?, ?, ?)
       ON CONFLICT (workspace_id, name) DO UPDATE SET value = excluded.value, updated_at = now()
       RETURNING *, (xmax = 0) AS created`,
      [newId(), workspaceId, name, sealed],
    );
    return { ...shown(row!), created: row!.created };
  }

  async list(workspaceId: string, page: PageRequest): Promise<Page<WorkspaceSecret>> {
    const [counted] = await this.em.execute<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM workspace_secret WHERE workspace_id = ?`,
      [workspaceId],
    );
    const rows = await this.em.execute<SecretRow[]>(
      `SELECT * FROM workspace_secret WHERE workspace_id = ? ORDER BY name LIMIT ? OFFSET ?`,
      [workspaceId, page.limit, page.offset],
    );
    return { items: rows.map(shown), total: counted?.n ?? 0, limit: page.limit, offset: page.offset };
  }

  async get(workspaceId: string, name: string): Promise<WorkspaceSecret> {
    const [row] = await this.em.execute<SecretRow[]>(
      `SELECT * FROM workspace_secret WHERE workspace_id = ? AND name = ?`,
      [workspaceId, name],
    );
    if (!row) throw new NotFoundError('workspace secret', name);
    return shown(row);
  }

  /** Deleted: references to it fail where they are used, until a secret of that name is written again. */
  async delete(workspaceId: string, name: string): Promise<WorkspaceSecret> {
    const [row] = await this.em.execute<SecretRow[]>(
      `DELETE FROM workspace_secret WHERE workspace_id = ? AND name = ? RETURNING *`,
      [workspaceId, name],
    );
    if (!row) throw new NotFoundError('workspace secret', name);
    return shown(row);
  }
}
