import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../../domain/errors';
import { slugify } from '../../domain/slug';
import { WorkspaceSchema, type Workspace } from '../entities';
import { conflictOnDuplicate } from '../errors';
import { newId } from '../ids';

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
