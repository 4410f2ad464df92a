import type { Job } from '../../db/entities';
import { openTree } from '../../db/sensitiveValues';
import { ArgoCdConfig, argoCdServerUrl } from '../../domain/jobAgents';
import { isTerminalJobStatus, type JobStatus } from '../../domain/jobStatus';
import { renderTemplate, templateContext, TemplateError } from '../../domain/templates';
import {
  agentConfigOf,
  endAtDispatch,
  missingConfiguration,
  type DispatchDeps,
  type JobDispatcher,
} from './dispatcher';
import { dispatchRemote, lookAtRemote, moveJobQuietly, REMOTE_CLOCK_SLACK_MS } from './pushAgent';
import type { Egress } from '../egress';
import { RemoteRefusal, remoteJson, type RemoteRequest } from './remote';

/** The parts of an Argo CD Application's status that say how a sync went. */
interface ArgoApplicationStatus {
  sync?: { status?: string; revision?: string };
  health?: { status?: string; message?: string };
  operationState?: { phase?: string; message?: string; startedAt?: string; finishedAt?: string };
}

/**
 * Where an Argo CD sync stands, as a job status: the sync operation failing, or the application
 * turning Degraded, is a failure; Synced and Healthy after a successful sync is success; the rest is
 * still in progress.
 */
function jobStatusOfApplication(status: ArgoApplicationStatus): {
  status: JobStatus;
  message: string;
} {
  const operation = status.operationState;
  const sync = status.sync?.status ?? 'Unknown';
  const health = status.health?.status ?? 'Unknown';
  const summary = `sync ${operation?.phase ?? 'pending'}, ${sync}, ${health}`;
  if (operation?.phase === 'Failed' || operation?.phase === 'Error') {
    return { status: 'failure', message: `Argo CD ${summary}: ${operation.message ?? 'the sync failed'}` };
  }
  if (health === 'Degraded') {
    return {
      status: 'failure',
      message: `Argo CD ${summary}: ${status.health?.message ?? 'the application is degraded'}`,
    };
  }
  if (operation?.phase === 'Succeeded' && sync === 'Synced' && health === 'Healthy') {
    return { status: 'successful', message: `Argo CD ${summary}` };
  }
  return { status: 'in_progress', message: `Argo CD ${summary}` };
}

/**
 * Whether the application's operation was started for this job: until the application shows an
 * operation started after the job, what it shows is an older sync's.
 */
function operationOfJob(status: ArgoApplicationStatus, job: Job): boolean {
  const started = Date.parse(status.operationState?.startedAt ?? '');
  return started >= job.createdAt.getTime() - REMOTE_CLOCK_SLACK_MS;
}

/** Argo CD's refusal of a sync while the application runs another operation (gRPC FailedPrecondition, 400). */
function isOperationInProgress(error: unknown): boolean {
  return error instanceof RemoteRefusal && /another operation is already in progress/i.test(error.message);
}

class ArgoCdApi {
  constructor(
    private readonly egress: Egress,
    private readonly serverUrl: string,
    private readonly apiKey: string,
  ) {}

  private call<T>(path: string, request: RemoteRequest = {}): Promise<T> {
    return remoteJson<T>(this.egress, 'Argo CD', `${this.serverUrl}${path}`, {
      ...request,
      headers: { authorization: `Bearer ${this.apiKey}` },
    });
  }

  /** Creates the application, or updates it to this spec. */
  async upsert(application: Record<string, unknown>): Promise<void> {
    await this.call('/api/v1/applications?upsert=true', { method: 'POST', body: application });
  }

  async sync(name: string): Promise<void> {
    await this.call(`/api/v1/applications/${encodeURIComponent(name)}/sync`, {
      method: 'POST',
      body: { name },
    });
  }

  async status(name: string): Promise<ArgoApplicationStatus> {
    return (
      (
        await this.call<{ status?: ArgoApplicationStatus }>(
          `/api/v1/applications/${encodeURIComponent(name)}`,
        )
      ).status ?? {}
    );
  }

  /** Stops the application's running sync operation. */
  async terminate(name: string): Promise<void> {
    await this.call(`/api/v1/applications/${encodeURIComponent(name)}/operation`, { method: 'DELETE' });
  }
}

/** The agent's API and template, or what is missing from its configuration. */
function targetFor(
  job: Job,
  { secrets, egress }: DispatchDeps,
): { api: ArgoCdApi; template: string } | string {
  const config = agentConfigOf(ArgoCdConfig, job, secrets);
  const apiKey = typeof config.api_key === 'string' ? config.api_key : undefined;
  const missing = missingConfiguration('argo-cd', {
    template: config.template,
    server_url: config.server_url,
    api_key: apiKey,
  });
  if (missing) return missing;
  return {
    api: new ArgoCdApi(egress, argoCdServerUrl(config.server_url!).replace(/\/$/, ''), apiKey!),
    template: config.template!,
  };
}

/** The Application the agent's template renders for this job. */
function renderApplication(
  job: Job,
  secrets: DispatchDeps['secrets'],
  template: string,
): { name: string; application: Record<string, unknown> } {
  const application = renderTemplate(
    template,
    templateContext(job.id, job.dispatchContext, (tree) => openTree(secrets, tree)),
  );
  const name = (application.metadata as { name?: unknown } | undefined)?.name;
  if (typeof name !== 'string' || !name)
    throw new TemplateError('the rendered Application has no metadata.name');
  return { name, application };
}

/**
 * Argo CD (`argo-cd`): the template renders an Application, which is created or updated with
 * `upsert`, then synced; the release workflow follows its sync and health until it settles.
 */
export const argoCdDispatcher: JobDispatcher = {
  async dispatch(job, deps, step) {
    const { em, secrets } = deps;
    const target = targetFor(job, deps);
    if (typeof target === 'string') return endAtDispatch(em, job.id, 'invalid_job_agent', target);
    const { api } = target;
    return dispatchRemote(em, job, async () => {
      if (step?.name === 'sync') {
        const name = step.state.name!;
        const requested = await api.sync(name).then(
          () => true,
          (error: unknown) => {
            if (!isOperationInProgress(error)) throw error;
            return false;
          },
        );
        // Refused as busy: this step's own sync, sent before a crash lost its answer, or one the
        // upsert caused (automated sync) is followed like a requested one; an older operation is
        // waited out by the activity's retries.
        if (!requested && !operationOfJob(await api.status(name), job)) {
          throw new Error(`Argo CD application ${name} is running an earlier operation; syncing again later`);
        }
        return {
          externalId: name,
          message: `Argo CD application ${name}: ${requested ? 'sync requested' : 'its sync is running'}`,
        };
      }
      const { name, application } = renderApplication(job, secrets, target.template);
      await api.upsert(application);
      return { next: { name: 'sync', state: { name } } };
    });
  },

  follow(job, deps) {
    const { em } = deps;
    const target = targetFor(job, deps);
    if (typeof target === 'string' || !job.externalId) return Promise.resolve({ done: true });
    const { api } = target;
    const name = job.externalId;
    return lookAtRemote(em, job, async () => {
      if (isTerminalJobStatus(job.status)) {
        if (job.status === 'cancelled') await api.terminate(name);
        return { done: true };
      }
      const status = await api.status(name);
      if (!operationOfJob(status, job)) return { done: false };
      const next = jobStatusOfApplication(status);
      const changed = next.status !== job.status;
      if (changed) await moveJobQuietly(em, job.id, next);
      return { done: isTerminalJobStatus(next.status), changed };
    });
  },
};
