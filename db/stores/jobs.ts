import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobStatus } from '../../domain/jobStatus';
import type { Page, PageRequest } from '../../domain/pagination';
import type { ReleaseTargetRef } from '../../domain/releaseTargets';
import {
  DeploymentSchema,
  EnvironmentSchema,
  JobSchema,
  JobVerificationSchema,
  ReleaseSchema,
  ResourceSchema,
  type Deployment,
  type Environment,
  type Job,
  type JobVerification,
  type Release,
  type Resource,
} from '../entities';
import { NotFoundError } from '../../domain/errors';
import { changeJobStatus, type JobStatusChange } from '../jobMoves';
import { findOwned, listPage } from './common';

export interface JobFilter extends Partial<ReleaseTargetRef> {
  status?: JobStatus;
  releaseId?: string;
  jobAgentId?: string;
}

/** A job with the release it runs and that release's target records (Ctrlplane's `with-release`). */
export interface JobWithRelease {
  job: Job;
  release: Release;
  deployment: Deployment;
  environment: Environment;
  resource: Resource;
}

export class JobStore {
  constructor(private readonly em: EntityManager) {}

  list(
    workspaceId: string,
    filter: JobFilter,
    page: PageRequest,
    order: 'asc' | 'desc' = 'asc',
  ): Promise<Page<Job>> {
    const where = Object.fromEntries(
      Object.entries({ workspaceId, ...filter }).filter(([, v]) => v !== undefined),
    );
    return listPage(this.em, JobSchema, where, page, order);
  }

  get(workspaceId: string, id: string): Promise<Job> {
    return findOwned(this.em, JobSchema, workspaceId, id, 'job');
  }

  async withRelease(workspaceId: string, id: string): Promise<JobWithRelease> {
    const job = await this.get(workspaceId, id);
    // A workflow run's job has no release to show.
    if (!job.releaseId) throw new NotFoundError('release of job', id);
    const release = await this.em.findOneOrFail(ReleaseSchema, { id: job.releaseId });
    return {
      job,
      release,
      deployment: await this.em.findOneOrFail(DeploymentSchema, { id: release.deploymentId }),
      environment: await this.em.findOneOrFail(EnvironmentSchema, { id: release.environmentId }),
      resource: await this.em.findOneOrFail(ResourceSchema, { id: release.resourceId }),
    };
  }

  /**
   * docs/behaviour.md "Status report": records it, sets completedAt on a terminal status, and wakes the release.
   * A key scoped to a job agent may report only that agent's jobs.
   */
  reportStatus(
    workspaceId: string,
    jobAgentId: string | null,
    id: string,
    change: JobStatusChange,
  ): Promise<Job> {
    return changeJobStatus(this.em, { workspaceId, jobAgentId }, id, change);
  }

  async verifications(jobIds: string[]): Promise<Map<string, JobVerification[]>> {
    const rows = await this.em.find(
      JobVerificationSchema,
      { jobId: jobIds },
      { orderBy: { createdAt: 'asc', id: 'asc' } },
    );
    const map = new Map<string, JobVerification[]>(jobIds.map((id) => [id, []]));
    for (const row of rows) map.get(row.jobId)!.push(row);
    return map;
  }
}
