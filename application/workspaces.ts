import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../domain/errors';
import { slugify } from '../domain/slug';
import { WorkspaceSchema, type Workspace } from '../db/entities';
import { conflictOnDuplicate } from '../db/errors';
import { newId } from '../db/ids';
import { wakeReleases } from '../db/releaseWake';
import { ApiKeyStore, type IssuedApiKey } from './apiKeys';
import { definedOnly } from './common';

export class WorkspaceStore {
  constructor(private readonly em: EntityManager) {}

  async create(input: { name: string; slug?: string }): Promise<Workspace> {
    const slug = input.slug ?? slugify(input.name);
    if (!slug) throw new ValidationError('A workspace needs a name with at least one letter or digit');
    return conflictOnDuplicate(async () => {
      const workspace = this.em.create(WorkspaceSchema, { id: newId(), name: input.name, slug });
      await this.em.flush();
      return workspace;
    }, `A workspace with slug "${slug}" already exists`);
  }

  /** A workspace and its first API key, together or neither. */
  createWithKey(input: {
    name: string;
    slug?: string;
  }): Promise<{ workspace: Workspace; issued: IssuedApiKey }> {
    return this.em.transactional(async (em) => {
      const workspace = await new WorkspaceStore(em).create(input);
      const issued = await new ApiKeyStore(em).create({ workspaceId: workspace.id, name: 'first key' });
      return { workspace, issued };
    });
  }

  /** Renames a workspace or changes its slug; fields left out stay. */
  async update(id: string, changes: { name?: string; slug?: string }): Promise<Workspace> {
    const workspace = await this.get(id);
    return conflictOnDuplicate(
      async () => {
        this.em.assign(workspace, definedOnly(changes));
        await this.em.flush();
        return workspace;
      },
      `A workspace with slug "${changes.slug ?? ''}" already exists`,
    );
  }

  /**
   * Deletes a workspace and, by cascade, every record of it: keys stop working at once. Its open
   * releases are woken in the same transaction: their workflows find the release gone and end;
   * jobs an agent already runs are not cancelled at the agent (the agent's key is gone with them).
   */
  delete(id: string): Promise<void> {
    return this.em.transactional(async (em) => {
      const workspace = await em.findOne(WorkspaceSchema, { id });
      if (!workspace) throw new NotFoundError('workspace', id);
      const open = await em.execute<{ id: string }[]>(
        `SELECT id FROM release WHERE workspace_id = ? AND phase IN ('pending', 'running')`,
        [id],
      );
      await wakeReleases(
        em,
        open.map((release) => release.id),
      );
      em.remove(workspace);
      await em.flush();
    });
  }

  /** The caller's own workspace by its slug; any other slug is unknown to it. */
  async getOwnBySlug(callerWorkspaceId: string, slug: string): Promise<Workspace> {
    const workspace = await this.em.findOne(WorkspaceSchema, { id: callerWorkspaceId, slug });
    if (!workspace) throw new NotFoundError('workspace', slug);
    return workspace;
  }

  async get(id: string): Promise<Workspace> {
    const workspace = await this.em.findOne(WorkspaceSchema, { id });
    if (!workspace) throw new NotFoundError('workspace', id);
    return workspace;
  }

  /** The oldest workspace, which `flightdeck start` treats as the default one. */
  async oldest(): Promise<Workspace | undefined> {
    const [first] = await this.em.find(
      WorkspaceSchema,
      {},
      { orderBy: { createdAt: 'asc', id: 'asc' }, limit: 1 },
    );
    return first;
  }
}
