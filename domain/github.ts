import { createHmac, timingSafeEqual } from 'node:crypto';
import type { JobStatus } from './jobStatus';

/**
 * The GitHub workflow runner's rules (docs/behaviour.md "Push agents": a
 * workflow run receives the job id, the version tag, the environment name and the resource identifier).
 */

export interface WorkflowRunState {
  status: string | null;
  conclusion: string | null;
}

/** A workflow run as GitHub's REST API and `workflow_run` webhooks describe it (the fields we read). */
export interface WorkflowRun extends WorkflowRunState {
  id: number;
  name?: string | null;
  display_title?: string;
  html_url: string;
}

/** The `workflow_dispatch` inputs of a job; GitHub takes strings only. */
export function workflowInputs(context: {
  jobId: string;
  versionTag: string;
  environmentName: string;
  resourceIdentifier: string;
}): Record<string, string> {
  return {
    job_id: context.jobId,
    version_tag: context.versionTag,
    environment_name: context.environmentName,
    resource_identifier: context.resourceIdentifier,
  };
}

/**
 * A workflow run's status and conclusion as a job status. Waiting states keep the job
 * `triggered`; an unknown conclusion counts as a failure rather than a success.
 */
export function jobStatusOfRun(run: WorkflowRunState): JobStatus {
  if (run.status !== 'completed') {
    return run.status === 'in_progress'
      ? 'in_progress'
      : run.status === 'action_required'
        ? 'action_required'
        : 'triggered';
  }
  switch (run.conclusion) {
    case 'success':
    case 'neutral':
      return 'successful';
    case 'cancelled':
      return 'cancelled';
    case 'skipped':
      return 'skipped';
    case 'action_required':
      return 'action_required';
    default:
      return 'failure';
  }
}

/**
 * Which run a dispatch made: GitHub does not say, so the workflow names its runs after the job
 * (`run-name: ... ${{ inputs.job_id }}`) and the run whose title carries the job id is the one.
 */
export function isRunOfJob(run: { display_title?: string; name?: string | null }, jobId: string): boolean {
  return Boolean(run.display_title?.includes(jobId) || run.name?.includes(jobId));
}

/** GitHub's `X-Hub-Signature-256`: `sha256=` and the HMAC-SHA256 of the raw body with the webhook secret. */
export function isValidWebhookSignature(
  secret: string,
  rawBody: string,
  signature: string | undefined,
): boolean {
  if (!signature?.startsWith('sha256=')) return false;
  const expected = Buffer.from(
    `sha256=${createHmac('sha256', secret).update(rawBody, 'utf8').digest('hex')}`,
  );
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The job message for a run: its link and where it stands. */
export function describeRun(run: WorkflowRunState & { html_url: string }): string {
  return `GitHub run ${run.html_url} (${[run.status, run.conclusion].filter(Boolean).join(', ')})`;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** The ids in a run's title: the job it runs is one of them (see `isRunOfJob`). */
export function idsInRunTitle(run: { display_title?: string; name?: string | null }): string[] {
  return [...`${run.display_title ?? ''} ${run.name ?? ''}`.matchAll(UUID)].map((match) =>
    match[0].toLowerCase(),
  );
}
