import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import type { ReleaseTargetRef } from '../domain/releaseTargets';
import {
  JobSchema,
  ReleaseSchema,
  ReleaseTargetSchema,
  ReleaseTargetStateSchema,
  type Job,
  type Release,
  type ReleaseTarget,
} from '../db/entities';
import { listPage } from './common';

export interface TargetState {
  target: ReleaseTarget;
  desiredRelease: Release | null;
  currentRelease: Release | null;
  latestJob: Job | null;
}

/** docs/behaviour.md "Release": a target's desired release, current release and latest job. */
export class TargetStateStore {
  constructor(private readonly em: EntityManager) {}

  async get(workspaceId: string, ref: ReleaseTargetRef, key: string): Promise<TargetState> {
    const target = await this.em.findOne(ReleaseTargetSchema, { ...ref, workspaceId });
    if (!target) throw new NotFoundError('release target', key);
    return (await this.statesOf([target]))[0]!;
  }

  async forDeploymentAndEnvironment(
    workspaceId: string,
    deploymentId: string,
    environmentId: string,
    page: PageRequest,
  ): Promise<Page<TargetState>> {
    const targets = await listPage(
      this.em,
      ReleaseTargetSchema,
      { workspaceId, deploymentId, environmentId },
      page,
      'asc',
      ['resourceId'],
    );
    return { ...targets, items: await this.statesOf(targets.items) };
  }

  private async statesOf(targets: ReleaseTarget[]): Promise<TargetState[]> {
    if (targets.length === 0) return [];
    const states = await this.em.find(ReleaseTargetStateSchema, {
      $or: targets.map(({ resourceId, environmentId, deploymentId }) => ({
        resourceId,
        environmentId,
        deploymentId,
      })),
    });
    const releaseIds = states.flatMap((s) =>
      [s.desiredReleaseId, s.currentReleaseId].filter((id): id is string => !!id),
    );
    const releases = new Map((await this.em.find(ReleaseSchema, { id: releaseIds })).map((r) => [r.id, r]));
    const jobIds = states.flatMap((s) => (s.latestJobId ? [s.latestJobId] : []));
    const jobs = new Map((await this.em.find(JobSchema, { id: jobIds })).map((j) => [j.id, j]));
    return targets.map((target) => {
      const state = states.find(
        (s) =>
          s.resourceId === target.resourceId &&
          s.environmentId === target.environmentId &&
          s.deploymentId === target.deploymentId,
      );
      return {
        target,
        desiredRelease: (state?.desiredReleaseId && releases.get(state.desiredReleaseId)) || null,
        currentRelease: (state?.currentReleaseId && releases.get(state.currentReleaseId)) || null,
        latestJob: (state?.latestJobId && jobs.get(state.latestJobId)) || null,
      };
    });
  }
}
