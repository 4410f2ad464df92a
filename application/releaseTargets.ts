import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../domain/errors';
import type { Explanation } from '../domain/explain';
import { passesEveryRule } from '../domain/gates';
import type { Page, PageRequest } from '../domain/pagination';
import type { ReleaseTargetRef } from '../domain/releaseTargets';
import { CelQuery, selectorContext } from '../domain/selectors';
import { DeploymentVersionSchema, ReleaseTargetSchema, type ReleaseTarget } from '../db/entities';
import { loadTargetVersionFacts } from '../engine/eligibility';
import type { SecretBox } from '../db/secrets';
import { explainReleaseTarget } from '../engine/explain';
import { previewTargetVariables, type VariablePreview } from '../engine/planner';
import { listPage } from './common';
import { withDependencies, type VersionWithDependencies } from './versionDependencies';

export interface EligibilityQuery {
  /** CEL over `version`: only versions it matches. */
  filter?: string;
  excludeRuleIds?: string[];
}

export type ReleaseTargetFilter = Partial<ReleaseTargetRef>;

export class ReleaseTargetStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
  ) {}

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

  /**
   * The ready versions of the target's deployment that pass every policy rule there now (and their
   * dependencies), newest first, filtered, then paged.
   */
  async eligibleVersions(
    workspaceId: string,
    ref: ReleaseTargetRef,
    key: string,
    query: EligibilityQuery,
    page: PageRequest,
  ): Promise<Page<VersionWithDependencies>> {
    await this.get(workspaceId, ref, key);
    const facts = await loadTargetVersionFacts(this.em, workspaceId, ref);
    const excluded = new Set(query.excludeRuleIds ?? []);
    const now = new Date();
    const filter = query.filter ? new CelQuery('version', query.filter) : undefined;
    const eligible = [...facts.values()]
      .filter(
        ({ facts: versionFacts }) =>
          (!filter || filter.matches({ version: selectorContext.version(versionFacts.version) })) &&
          passesEveryRule(versionFacts, now, excluded),
      )
      .map(({ facts: versionFacts }) => versionFacts.version)
      .sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || (b.id > a.id ? 1 : -1));
    const shown = eligible.slice(page.offset, page.offset + page.limit);
    const versions = new Map(
      (await this.em.find(DeploymentVersionSchema, { id: { $in: shown.map((v) => v.id) } })).map((v) => [
        v.id,
        v,
      ]),
    );
    return {
      items: await withDependencies(
        this.em,
        shown.map((version) => versions.get(version.id)!),
      ),
      total: eligible.length,
      limit: page.limit,
      offset: page.offset,
    };
  }

  /** The variables a version would get on the target, with their sources (engine/planner/targetVariables.ts). */
  async previewVariables(
    workspaceId: string,
    ref: ReleaseTargetRef,
    key: string,
    versionId?: string,
  ): Promise<VariablePreview> {
    await this.get(workspaceId, ref, key);
    return previewTargetVariables(this.em, this.secrets, workspaceId, ref, versionId);
  }

  /** Why the target is (not) on a version (engine/explain/targetExplain.ts). */
  async explain(
    workspaceId: string,
    ref: ReleaseTargetRef,
    key: string,
    versionId?: string,
  ): Promise<Explanation> {
    await this.get(workspaceId, ref, key);
    return explainReleaseTarget(this.em, this.secrets, workspaceId, ref, versionId);
  }

  async get(workspaceId: string, ref: ReleaseTargetRef, key: string): Promise<ReleaseTarget> {
    const target = await this.em.findOne(ReleaseTargetSchema, { ...ref, workspaceId });
    if (!target) throw new NotFoundError('release target', key);
    return target;
  }
}
