import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../../domain/errors';
import type { Page, PageRequest } from '../../domain/pagination';
import type { ReleaseTargetRef } from '../../domain/releaseTargets';
import { ReleaseTargetSchema, type ReleaseTarget } from '../entities';
import { listPage } from './common';

export type ReleaseTargetFilter = Partial<ReleaseTargetRef>;

export class ReleaseTargetStore {
  constructor(private readonly em: EntityManager) {}

  list(workspaceId: string, filter: ReleaseTargetFilter, page: PageRequest): Promise<Page<ReleaseTarget>> {
    const where = Object.fromEntries(
      Object.entries({ workspaceId, ...filter }).filter(([, value]) => value !== undefined),
    );
    return listPage(this.em, ReleaseTargetSchema, where, page, 'asc', [
      'resourceId',
      'environmentId',
      'deploymentId',
    ]);
  }

  async get(workspaceId: string, ref: ReleaseTargetRef, key: string): Promise<ReleaseTarget> {
    const target = await this.em.findOne(ReleaseTargetSchema, { ...ref, workspaceId });
    if (!target) throw new NotFoundError('release target', key);
    return target;
  }
}
