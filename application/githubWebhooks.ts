import type { EntityManager } from '@mikro-orm/postgresql';
import {
  describeRun,
  idsInRunTitle,
  isValidWebhookSignature,
  jobStatusOfRun,
  type WorkflowRun,
} from '../domain/github';
import { ConflictError, NotFoundError, UnauthenticatedError } from '../domain/errors';
import { JobAgentSchema, JobSchema, type JobAgent } from '../db/entities';
import { changeJobStatus } from '../engine/jobMoves';
import { SecretReferenceError, withAgentSecrets } from '../db/secretReferences';
import type { SecretBox } from '../db/secrets';
import { openConfig } from '../db/sensitiveValues';

export interface WorkflowRunEvent {
  action?: string;
  workflow_run?: WorkflowRun;
}

export type WebhookOutcome =
  { handled: false; reason: string } | { handled: true; jobId: string; status: string };

/**
 * GitHub's `workflow_run` webhook for one `github-app` agent: a signed event moves the job whose run
 * it is, sooner than the release workflow's next look at the run would.
 */
export class GithubWebhookStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
  ) {}

  /**
   * The agent's webhook secret in clear. A reference to a workspace secret is resolved, never
   * compared as written (the reference is answered by GET, so anyone could sign with it); one that
   * does not resolve leaves the agent without a webhook.
   */
  private async webhookSecret(agent: JobAgent): Promise<unknown> {
    const opened = {
      workspaceId: agent.workspaceId,
      agentType: agent.type,
      jobAgentConfig: openConfig(
        this.secrets.forRecord(agent.workspaceId, 'job_agent', agent.id),
        agent.config,
      ),
    };
    try {
      return (await withAgentSecrets(this.em, this.secrets, opened)).jobAgentConfig.webhook_secret;
    } catch (error) {
      if (error instanceof SecretReferenceError) return undefined;
      throw error;
    }
  }

  async receive(
    workspaceId: string,
    jobAgentId: string,
    delivery: {
      event: string | undefined;
      signature: string | undefined;
      rawBody: string;
      payload: WorkflowRunEvent;
    },
  ): Promise<WebhookOutcome> {
    const agent = await this.em.findOne(JobAgentSchema, { id: jobAgentId, workspaceId, type: 'github-app' });
    const secret = agent ? await this.webhookSecret(agent) : undefined;
    if (!agent || typeof secret !== 'string')
      throw new NotFoundError('GitHub webhook of job agent', jobAgentId);
    if (!isValidWebhookSignature(secret, delivery.rawBody, delivery.signature)) {
      throw new UnauthenticatedError(
        'The X-Hub-Signature-256 header does not match the body and the webhook secret',
      );
    }
    const run = delivery.payload.workflow_run;
    if (delivery.event !== 'workflow_run' || !run)
      return { handled: false, reason: `ignored event ${delivery.event}` };

    const job =
      (await this.em.findOne(JobSchema, { jobAgentId, externalId: String(run.id) })) ??
      (await this.em.findOne(JobSchema, { jobAgentId, id: { $in: idsInRunTitle(run) } }));
    if (!job) return { handled: false, reason: `run ${run.id} is not a job of this agent` };
    const status = jobStatusOfRun(run);
    try {
      await changeJobStatus(this.em, { workspaceId }, job.id, {
        status,
        externalId: String(run.id),
        message: describeRun(run),
      });
    } catch (error) {
      // A late or repeated delivery for a job that already moved on changes nothing.
      if (!(error instanceof ConflictError)) throw error;
      return { handled: false, reason: error.message };
    }
    return { handled: true, jobId: job.id, status };
  }
}
