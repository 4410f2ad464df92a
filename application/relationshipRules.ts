import type { EntityManager } from '@mikro-orm/postgresql';
import type { Page, PageRequest } from '../domain/pagination';
import { RelationshipRuleSchema, type RelationshipRule } from '../db/entities';
import { newId } from '../db/ids';
import { findOwned, listPage, type Upserted } from './common';

export interface RelationshipRuleInput {
  name: string;
  description?: string | null;
  reference: string;
  cel: string;
  metadata?: Record<string, string>;
}

/**
 * Ctrlplane's relationship rules. A rule changes no job already created: related resources are
 * found when jobs are created (engine/executor/jobCreation.ts).
 */
export class RelationshipRuleStore {
  constructor(private readonly em: EntityManager) {}

  list(workspaceId: string, page: PageRequest): Promise<Page<RelationshipRule>> {
    return listPage(this.em, RelationshipRuleSchema, { workspaceId }, page);
  }

  get(workspaceId: string, id: string): Promise<RelationshipRule> {
    return findOwned(this.em, RelationshipRuleSchema, workspaceId, id, 'relationship rule');
  }

  async create(workspaceId: string, input: RelationshipRuleInput): Promise<RelationshipRule> {
    return (await this.upsert(workspaceId, newId(), input)).record;
  }

  async upsert(
    workspaceId: string,
    id: string,
    input: RelationshipRuleInput,
  ): Promise<Upserted<RelationshipRule>> {
    const existing = await this.em.findOne(RelationshipRuleSchema, { id });
    if (existing && existing.workspaceId !== workspaceId) await this.get(workspaceId, id);
    const fields = {
      name: input.name,
      description: input.description ?? null,
      reference: input.reference,
      cel: input.cel,
      metadata: input.metadata ?? {},
    };
    const record = existing
      ? this.em.assign(existing, fields)
      : this.em.create(RelationshipRuleSchema, { id, workspaceId, ...fields });
    await this.em.flush();
    return { record, created: !existing };
  }

  async delete(workspaceId: string, id: string): Promise<RelationshipRule> {
    const rule = await this.get(workspaceId, id);
    await this.em.remove(rule).flush();
    return rule;
  }
}
