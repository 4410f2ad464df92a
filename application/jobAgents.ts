import type { EntityManager } from '@mikro-orm/postgresql';
import { agentDestination, refuseMovedCredentials } from '../domain/credentialBinding';
import { NotFoundError } from '../domain/errors';
import type { JobAgentType } from '../domain/jobAgentTypes';
import type { Page, PageRequest } from '../domain/pagination';
import { JobAgentSchema, type JobAgent } from '../db/entities';
import { conflictOnDuplicate } from '../db/errors';
import type { SecretBox } from '../db/secrets';
import { agentConfigReferences, bindSecretReferences } from '../db/secretReferences';
import { keptSecrets, sealConfig } from '../db/sensitiveValues';
import { findOwned, listPage, type Upserted } from './common';

export interface JobAgentInput {
  name: string;
  type: JobAgentType;
  config: Record<string, unknown>;
  metadata?: Record<string, string>;
}

export class JobAgentStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
  ) {}

  /**
   * PUT with a client-chosen id; sensitive configuration values are sealed before they are stored.
   * A stored secret is kept (`{"sensitive": true}`) only while the agent's type and endpoint stay.
   */
  upsert(workspaceId: string, id: string, input: JobAgentInput): Promise<Upserted<JobAgent>> {
    return conflictOnDuplicate(
      () =>
        this.em.transactional(async (em) => {
          const existing = await em.findOne(JobAgentSchema, { id });
          if (existing && existing.workspaceId !== workspaceId) throw new NotFoundError('job agent', id);
          const destination = agentDestination(input.type, input.config);
          refuseMovedCredentials(
            keptSecrets(input.config, existing?.config, 'body.config'),
            existing ? agentDestination(existing.type, existing.config) : undefined,
            destination,
          );
          const fields = {
            name: input.name,
            type: input.type,
            config: sealConfig(
              this.secrets.forRecord(workspaceId, 'job_agent', id),
              input.config,
              existing?.config,
              'body.config',
            ),
            metadata: input.metadata ?? {},
          };
          await bindSecretReferences(
            em,
            workspaceId,
            agentConfigReferences(input.config, 'body.config'),
            destination,
          );
          const record = existing
            ? em.assign(existing, fields)
            : em.create(JobAgentSchema, { id, workspaceId, ...fields });
          await em.flush();
          return { record, created: !existing };
        }),
      `A job agent named "${input.name}" already exists in this workspace`,
    );
  }

  get(workspaceId: string, id: string): Promise<JobAgent> {
    return findOwned(this.em, JobAgentSchema, workspaceId, id, 'job agent');
  }

  list(workspaceId: string, page: PageRequest): Promise<Page<JobAgent>> {
    return listPage(this.em, JobAgentSchema, { workspaceId }, page);
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    const agent = await this.get(workspaceId, id);
    await this.em.remove(agent).flush();
  }
}
