import type { EntityManager } from '@mikro-orm/postgresql';
import { SYSTEM_ORIGIN, type AuditOrigin } from '../db/audit';
import type { JobStatus } from '../domain/jobStatus';
import type { Page, PageRequest } from '../domain/pagination';
import type { ReleaseTargetRef } from '../domain/releaseTargets';
import {
  DeploymentSchema,
  DeploymentVersionSchema,
  EnvironmentSchema,
  JobSchema,
  JobVerificationSchema,
  ReleaseSchema,
  ResourceSchema,
  type Deployment,
  type DeploymentVersion,
  type Environment,
  type Job,
  type JobVerification,
  type Release,
  type Resource,
} from '../db/entities';
import { NotFoundError } from '../domain/errors';
import { changeJobStatus, type JobStatusChange } from '../engine/jobMoves';
import { findOwned, listPage } from './common';

export interface JobFilter extends Partial<ReleaseTargetRef> {
  status?: JobStatus;
  releaseId?: string;
  jobAgentId?: string;
}

/** A job with the release it runs, its version and its target's records (Ctrlplane's `JobWithRelease`). */
export interface JobWithRelease {
  job: Job;
  release: Release;
  version: DeploymentVersion;
  deployment: Deployment;
  environment: Environment;
  resource: Resource;
}

const byId = <T extends { id: string }>(rows: T[]) => new Map(rows.map((row) => [row.id, row]));

export class JobStore {
  constructor(
    private readonly em: EntityManager,
    /** Who the request acts as: a reported status's audit event is theirs. */
    private readonly origin: AuditOrigin = SYSTEM_ORIGIN,
  ) {}

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

  /** A page of jobs (`list`), each with its release and target records (`withReleases`). */
  async listWithReleases(
    workspaceId: string,
    filter: JobFilter,
    page: PageRequest,
  ): Promise<Page<JobWithRelease | { job: Job }>> {
    const jobs = await this.list(workspaceId, filter, page);
    return { ...jobs, items: await this.withReleases(jobs.items) };
  }

  get(workspaceId: string, id: string): Promise<Job> {
    return findOwned(this.em, JobSchema, workspaceId, id, 'job');
  }

  async withRelease(workspaceId: string, id: string): Promise<JobWithRelease> {
    const job = await this.get(workspaceId, id);
    const [found] = await this.withReleases([job]);
    // A runbook run's job has no release to show.
    if (!found || !('release' in found)) throw new NotFoundError('release of job', id);
    return found;
  }

  /**
   * Each job with its release, version and target records, in the jobs' order; a runbook run's job (no release)
   * alone. One query per kind of record, whatever the number of jobs.
   */
  async withReleases(jobs: Job[]): Promise<(JobWithRelease | { job: Job })[]> {
    const ids = (values: string[]) => ({ id: [...new Set(values)] });
    const releases = byId(
      await this.em.find(ReleaseSchema, ids(jobs.flatMap((job) => (job.releaseId ? [job.releaseId] : [])))),
    );
    const shown = [...releases.values()];
    const versions = byId(await this.em.find(DeploymentVersionSchema, ids(shown.map((r) => r.versionId))));
    const deployments = byId(await this.em.find(DeploymentSchema, ids(shown.map((r) => r.deploymentId))));
    const environments = byId(await this.em.find(EnvironmentSchema, ids(shown.map((r) => r.environmentId))));
    const resources = byId(await this.em.find(ResourceSchema, ids(shown.map((r) => r.resourceId))));
    return jobs.map((job) => {
      const release = job.releaseId ? releases.get(job.releaseId) : undefined;
      if (!release) return { job };
      return {
        job,
        release,
        version: versions.get(release.versionId)!,
        deployment: deployments.get(release.deploymentId)!,
        environment: environments.get(release.environmentId)!,
        resource: resources.get(release.resourceId)!,
      };
    });
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
    return changeJobStatus(this.em, { workspaceId, jobAgentId }, id, { ...change, by: this.origin });
  }

  /** A job and its verifications, oldest first. */
  async withVerifications(
    workspaceId: string,
    id: string,
  ): Promise<{ job: Job; verifications: JobVerification[] }> {
    const job = await this.get(workspaceId, id);
    return { job, verifications: (await this.verifications([id])).get(id)! };
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
