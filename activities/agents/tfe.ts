import type { Job } from '../../db/entities';
import { isSealedValue, openTree } from '../../db/sensitiveValues';
import { TFE_ADDRESS, TfeConfig } from '../../domain/jobAgents';
import { isTerminalJobStatus, type JobStatus } from '../../domain/jobStatus';
import { renderTemplate, templateContext, TemplateError } from '../../domain/templates';
import {
  agentConfigOf,
  endAtDispatch,
  missingConfiguration,
  type DispatchDeps,
  type JobDispatcher,
} from './dispatcher';
import { dispatchRemote, lookAtRemote, moveJobQuietly } from './pushAgent';
import type { Egress } from '../egress';
import { RemoteRefusal, remoteJson, type RemoteRequest } from './remote';

/** A Terraform run's status as a job status (TFE "run states"); everything not listed is still running. */
function jobStatusOfTerraformRun(status: string): JobStatus {
  switch (status) {
    case 'applied':
    case 'planned_and_finished':
      return 'successful';
    case 'errored':
      return 'failure';
    case 'discarded':
    case 'canceled':
    case 'force_canceled':
      return 'cancelled';
    case 'planned':
    case 'cost_estimated':
    case 'policy_checked':
    case 'policy_override':
    case 'post_plan_completed':
      // Waiting for someone to confirm (or override) in Terraform Cloud, unless auto-apply is on.
      return 'action_required';
    default:
      return 'in_progress';
  }
}

export interface WorkspaceVariable {
  key: string;
  value: string;
  sensitive: boolean;
}

/** The job's resolved variables as Terraform variables: text values, sensitive where they were. */
function workspaceVariables(job: Job, secrets: DispatchDeps['secrets']): WorkspaceVariable[] {
  const stored = (job.dispatchContext.variables ?? {}) as Record<string, unknown>;
  const opened = openTree(secrets, stored);
  return Object.entries(opened).map(([key, value]) => ({
    key,
    value: typeof value === 'string' ? value : JSON.stringify(value),
    sensitive: isSealedValue(stored[key]),
  }));
}

interface Resource<A> {
  id: string;
  attributes: A;
}

class TfeApi {
  constructor(
    private readonly egress: Egress,
    private readonly address: string,
    private readonly token: string,
  ) {}

  private call<T>(path: string, request: RemoteRequest = {}): Promise<T> {
    return remoteJson<T>(this.egress, 'Terraform Cloud', `${this.address}/api/v2${path}`, {
      ...request,
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/vnd.api+json' },
    });
  }

  /** The workspace named in `attributes`, created or updated to them; answers its id. */
  async upsertWorkspace(organization: string, attributes: Record<string, unknown>): Promise<string> {
    const name = String(attributes.name);
    const org = encodeURIComponent(organization);
    const data = { type: 'workspaces', attributes };
    try {
      const existing = await this.call<{ data: Resource<unknown> }>(
        `/organizations/${org}/workspaces/${encodeURIComponent(name)}`,
      );
      await this.call(`/workspaces/${existing.data.id}`, { method: 'PATCH', body: { data } });
      return existing.data.id;
    } catch (error) {
      if (!(error instanceof RemoteRefusal && error.status === 404)) throw error;
    }
    return (
      await this.call<{ data: Resource<unknown> }>(`/organizations/${org}/workspaces`, {
        method: 'POST',
        body: { data },
      })
    ).data.id;
  }

  /** Each variable created, or updated where the workspace has it already (as a Terraform variable). */
  async writeVariables(workspaceId: string, variables: WorkspaceVariable[]): Promise<void> {
    const existing = (
      await this.call<{ data: Resource<{ key: string; category: string }>[] }>(
        `/workspaces/${workspaceId}/vars`,
      )
    ).data.filter((variable) => variable.attributes.category === 'terraform');
    for (const variable of variables) {
      const attributes = { ...variable, category: 'terraform', hcl: false };
      const current = existing.find((candidate) => candidate.attributes.key === variable.key);
      await (current
        ? this.call(`/workspaces/${workspaceId}/vars/${current.id}`, {
            method: 'PATCH',
            body: { data: { type: 'vars', id: current.id, attributes } },
          })
        : this.call(`/workspaces/${workspaceId}/vars`, {
            method: 'POST',
            body: { data: { type: 'vars', attributes } },
          }));
    }
  }

  /** The workspace's latest run whose message holds `fragment`, if one is among its newest 100. */
  async findRun(workspaceId: string, fragment: string): Promise<string | undefined> {
    const runs = await this.call<{ data: Resource<{ message?: string }>[] }>(
      `/workspaces/${encodeURIComponent(workspaceId)}/runs?page%5Bsize%5D=100`,
    );
    return runs.data.find((run) => run.attributes.message?.includes(fragment))?.id;
  }

  async createRun(workspaceId: string, message: string): Promise<string> {
    const created = await this.call<{ data: Resource<unknown> }>('/runs', {
      method: 'POST',
      body: {
        data: {
          type: 'runs',
          attributes: { message },
          relationships: { workspace: { data: { type: 'workspaces', id: workspaceId } } },
        },
      },
    });
    return created.data.id;
  }

  async runStatus(runId: string): Promise<string> {
    return (await this.call<{ data: Resource<{ status: string }> }>(`/runs/${encodeURIComponent(runId)}`))
      .data.attributes.status;
  }

  async cancelRun(runId: string): Promise<void> {
    await this.call(`/runs/${encodeURIComponent(runId)}/actions/cancel`, {
      method: 'POST',
      body: { comment: 'The Flightdeck release was cancelled' },
    });
  }
}

function targetFor(job: Job, { secrets, egress }: DispatchDeps) {
  const config = agentConfigOf(TfeConfig, job, secrets);
  const token = typeof config.token === 'string' ? config.token : undefined;
  const missing = missingConfiguration('tfe', {
    organization: config.organization,
    template: config.template,
    token,
  });
  if (missing) return missing;
  return {
    api: new TfeApi(egress, (config.address ?? TFE_ADDRESS).replace(/\/$/, ''), token!),
    organization: config.organization!,
    template: config.template!,
  };
}

/** The workspace attributes the agent's template renders for this job. */
function renderWorkspace(
  job: Job,
  secrets: DispatchDeps['secrets'],
  template: string,
): Record<string, unknown> {
  const attributes = renderTemplate(
    template,
    templateContext(job.id, job.dispatchContext, (tree) => openTree(secrets, tree)),
  );
  if (typeof attributes.name !== 'string' || !attributes.name) {
    throw new TemplateError('the rendered workspace has no name');
  }
  return attributes;
}

/**
 * Terraform Cloud / Enterprise (`tfe`): the template renders the workspace's attributes; the
 * workspace is created or updated, the job's variables written to it (sensitive ones marked
 * sensitive), and a run started; the release workflow follows the run until it ends.
 */
export const tfeDispatcher: JobDispatcher = {
  async dispatch(job, deps, step) {
    const { em, secrets } = deps;
    const target = targetFor(job, deps);
    if (typeof target === 'string') return endAtDispatch(em, job.id, 'invalid_job_agent', target);
    return dispatchRemote(em, job, async () => {
      const state = step?.state ?? {};
      switch (step?.name) {
        case undefined: {
          const attributes = renderWorkspace(job, secrets, target.template);
          const workspaceId = await target.api.upsertWorkspace(target.organization, attributes);
          return { next: { name: 'variables', state: { workspaceId, workspace: String(attributes.name) } } };
        }
        case 'variables':
          await target.api.writeVariables(state.workspaceId!, workspaceVariables(job, secrets));
          return { next: { name: 'run', state } };
        default: {
          const context = job.dispatchContext as {
            inputs?: { versionTag?: string; resourceIdentifier?: string };
          };
          // A worker that died after creating the run and before recording it: the run is already
          // there, named by the job id in its message; starting another would apply twice.
          const earlier = await target.api.findRun(state.workspaceId!, `Flightdeck job ${job.id}:`);
          if (earlier) {
            return {
              externalId: earlier,
              message: `Terraform run ${earlier} in workspace ${state.workspace} (started by an earlier attempt)`,
            };
          }
          const runId = await target.api.createRun(
            state.workspaceId!,
            `Flightdeck job ${job.id}: ${context.inputs?.versionTag ?? ''} to ${context.inputs?.resourceIdentifier ?? ''}`,
          );
          return { externalId: runId, message: `Terraform run ${runId} in workspace ${state.workspace}` };
        }
      }
    });
  },

  follow(job, deps) {
    const { em } = deps;
    const target = targetFor(job, deps);
    if (typeof target === 'string' || !job.externalId) return Promise.resolve({ done: true });
    const runId = job.externalId;
    return lookAtRemote(em, job, async () => {
      if (isTerminalJobStatus(job.status)) {
        if (job.status === 'cancelled') await target.api.cancelRun(runId);
        return { done: true };
      }
      const runStatus = await target.api.runStatus(runId);
      const status = jobStatusOfTerraformRun(runStatus);
      const changed = status !== job.status;
      if (changed)
        await moveJobQuietly(em, job.id, { status, message: `Terraform run ${runId}: ${runStatus}` });
      return { done: isTerminalJobStatus(status), changed };
    });
  },
};
