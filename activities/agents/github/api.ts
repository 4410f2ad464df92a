import type { z } from 'zod';
import type { WorkflowRun } from '../../../domain/github';
import { GITHUB_API_URL, type GithubAppConfig } from '../../../domain/jobAgents';
import { missingConfiguration } from '../dispatcher';
import type { Egress } from '../../egress';
import { remoteJson, type RemoteRequest } from '../remote';
import { GITHUB_HEADERS, installationToken, type GithubAppCredentials } from './auth';

/** What a dispatch needs of the merged configuration; checked before anything is sent. */
export interface GithubTarget {
  baseUrl: string;
  owner: string;
  repo: string;
  workflowId: number | string;
  ref: string;
  auth: { token: string } | GithubAppCredentials;
}

/** The merged configuration as a target, or the reason it cannot be one. */
export function githubTarget(
  jobAgentId: string,
  config: z.output<typeof GithubAppConfig>,
): GithubTarget | string {
  const secret = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const token = secret(config.token);
  const privateKey = secret(config.private_key);
  const app =
    config.app_id && config.installation_id && privateKey
      ? { jobAgentId, appId: config.app_id, installationId: config.installation_id, privateKey }
      : undefined;
  const missing = missingConfiguration('github-app', {
    owner: config.owner,
    repo: config.repo,
    workflow_id: config.workflow_id,
    'token, or app_id + installation_id + private_key': token ?? app,
  });
  if (missing) return missing;
  return {
    baseUrl: (config.base_url ?? GITHUB_API_URL).replace(/\/$/, ''),
    owner: config.owner!,
    repo: config.repo!,
    workflowId: config.workflow_id!,
    ref: config.ref,
    auth: token ? { token } : app!,
  };
}

/** The few GitHub Actions REST endpoints the workflow runner uses. */
export class GithubActions {
  constructor(
    private readonly egress: Egress,
    private readonly target: GithubTarget,
  ) {}

  private async call<T>(path: string, request: RemoteRequest = {}): Promise<T> {
    const { auth, baseUrl } = this.target;
    const token = 'token' in auth ? auth.token : await installationToken(this.egress, baseUrl, auth);
    return remoteJson<T>(this.egress, 'GitHub', `${baseUrl}${path}`, {
      ...request,
      headers: { authorization: `Bearer ${token}`, ...GITHUB_HEADERS },
    });
  }

  private get repoPath(): string {
    return `/repos/${encodeURIComponent(this.target.owner)}/${encodeURIComponent(this.target.repo)}`;
  }

  async dispatch(inputs: Record<string, string>): Promise<void> {
    await this.call(
      `${this.repoPath}/actions/workflows/${encodeURIComponent(String(this.target.workflowId))}/dispatches`,
      {
        method: 'POST',
        body: { ref: this.target.ref, inputs },
      },
    );
  }

  /** The workflow's dispatched runs created since `since`, newest first. */
  async dispatchedRuns(since: Date): Promise<WorkflowRun[]> {
    const query = new URLSearchParams({
      event: 'workflow_dispatch',
      created: `>=${since.toISOString().slice(0, 19)}Z`,
      per_page: '100',
    });
    const page = await this.call<{ workflow_runs: WorkflowRun[] }>(
      `${this.repoPath}/actions/workflows/${encodeURIComponent(String(this.target.workflowId))}/runs?${query}`,
    );
    return page.workflow_runs;
  }

  run(runId: string): Promise<WorkflowRun> {
    return this.call<WorkflowRun>(`${this.repoPath}/actions/runs/${encodeURIComponent(runId)}`);
  }

  async cancel(runId: string): Promise<void> {
    await this.call(`${this.repoPath}/actions/runs/${encodeURIComponent(runId)}/cancel`, { method: 'POST' });
  }
}
