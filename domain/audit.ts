import type { GateEvaluation } from './gates';
import type { RuleEvaluation } from './rules/evaluator';
import type { ReleaseIdentity } from './orchestration';
import type { Principal } from './principal';

/**
 * The audit trail (docs/behaviour.md "Audit trail"): every write through the API, the CLI and the
 * board, and every decision the system takes on its own, as one event. An event names the fields a
 * write set, never their values, so no secret can reach it; `details` carries only ids, statuses
 * and reasons.
 */

export type AuditActorType = 'key' | 'agent' | 'system';

export interface AuditActor {
  type: AuditActorType;
  id: string;
  name: string;
}

/** Who acts when no request does: a workflow, the reaper, a timer. */
export const SYSTEM_ACTOR: AuditActor = { type: 'system', id: 'flightdeck', name: 'Flightdeck' };

/** A key scoped to one job agent acts as that agent; the admin token as the operator. */
export function actorOf(principal: Principal): AuditActor {
  if (principal.kind === 'admin') return { type: 'key', id: 'admin', name: 'operator' };
  return principal.jobAgentId
    ? { type: 'agent', id: principal.jobAgentId, name: principal.keyName }
    : { type: 'key', id: principal.apiKeyId, name: principal.keyName };
}

export interface AuditEventInput {
  workspaceId: string;
  action: string;
  record: { type: string; id: string };
  /** The names of the fields the write set. */
  changes?: string[];
  details?: Record<string, unknown>;
  /** The deployment the event concerns, when it concerns one: its board's timeline shows it. */
  deploymentId?: string | null;
}

/** The events webhooks may subscribe to: the audit actions a receiver acts on. */
export const WEBHOOK_EVENTS = [
  'version.created',
  'release.created',
  'release.waiting',
  'approval.requested',
  'release.succeeded',
  'release.failed',
  'release.cancelled',
  'release.superseded',
  'release.rolled_back',
  'job.status_changed',
  'lease.expired',
  'hold.applied',
  'rollout.halted',
] as const;

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Path segments as the record type they name (`deployment-versions` → `version`). */
const RECORD_TYPES: Record<string, string> = {
  workspaces: 'workspace',
  'api-keys': 'api_key',
  systems: 'system',
  deployments: 'deployment',
  environments: 'environment',
  versions: 'version',
  'deployment-versions': 'version',
  dependencies: 'version_dependency',
  variables: 'variable',
  'deployment-variables': 'variable',
  values: 'variable_value',
  'deployment-variable-values': 'variable_value',
  'variable-sets': 'variable_set',
  resources: 'resource',
  identifier: 'resource',
  'relationship-rules': 'relationship_rule',
  workflows: 'workflow',
  slug: 'workflow',
  runs: 'workflow_run',
  'resource-providers': 'resource_provider',
  name: 'resource_provider',
  'job-agents': 'job_agent',
  policies: 'policy',
  'policy-skips': 'policy_skip',
  holds: 'hold',
  releases: 'release',
  jobs: 'job',
  webhooks: 'webhook',
  deliveries: 'webhook_delivery',
  'user-approval-records': 'approval',
  rollout: 'rollout',
};

/** Paths that end in a verb: the action on the record the path names before it. */
const VERBS: Record<string, string> = {
  approve: 'approved',
  reject: 'rejected',
  cancel: 'cancelled',
  redeploy: 'redeploy_requested',
  requeue: 'requeued',
  redeliver: 'redelivered',
  set: 'resources_set',
  pause: 'paused',
  resume: 'resumed',
  abort: 'aborted',
};

export interface WriteAudit {
  /** Overrides what the path says. */
  record?: string;
  action?: string;
}

export interface WriteRequest {
  method: string;
  /** The route's OpenAPI path, `{name}` for its parameters. */
  path: string;
  params: Record<string, unknown>;
  body: unknown;
  response: unknown;
  /** Whether the write created its record, when its handler said so. */
  created?: boolean;
  /** The route's own naming, where the path alone would mislead. */
  audit?: WriteAudit;
}

/**
 * What an API write was, from its route: the record its path names (the last collection, or the
 * one before a verb), the record's id (the answer's `id`, else the path's last parameter), the
 * action (the verb, or created/updated/deleted by the method and what the answer says it did) and
 * the fields the body set.
 */
export function describeWrite(
  write: WriteRequest,
): Omit<AuditEventInput, 'workspaceId' | 'deploymentId'> & { deploymentId?: string } {
  const segments = write.path.split('/').filter(Boolean);
  const last = segments[segments.length - 1]!;
  const verb = VERBS[last];
  const named = (verb ? segments.slice(0, -1) : segments).filter((segment) => RECORD_TYPES[segment]);
  const collection = named[named.length - 1] ?? last;
  const recordType = write.audit?.record ?? RECORD_TYPES[collection] ?? collection;
  const paramNames = segments.filter((s) => s.startsWith('{')).map((s) => s.slice(1, -1));
  const lastParam = paramNames[paramNames.length - 1];
  const paramId = lastParam && lastParam !== 'workspaceId' ? String(write.params[lastParam]) : undefined;
  // A verb acts on the record its path names (an approval's answer is the approval, not the release).
  const recordId = verb ? (paramId ?? idOf(write.response)) : (idOf(write.response) ?? paramId);
  const action = write.audit?.action ?? `${recordType}.${verb ?? methodVerb(write)}`;
  const deploymentId =
    recordType === 'deployment' ? recordId : (write.params.deploymentId as string | undefined);
  return {
    action,
    record: { type: recordType, id: recordId ?? String(write.params.workspaceId ?? '') },
    changes: fieldNames(write.body),
    ...(deploymentId ? { deploymentId } : {}),
  };
}

function idOf(response: unknown): string | undefined {
  if (!response || typeof response !== 'object') return undefined;
  const id = (response as { id?: unknown }).id;
  return typeof id === 'string' ? id : undefined;
}

function methodVerb({ method, response, created }: WriteRequest): string {
  if (method === 'delete') return 'deleted';
  if (created !== undefined) return created ? 'created' : 'updated';
  const message = (response as { message?: unknown } | undefined)?.message;
  if (typeof message === 'string' && /\bupdated$/i.test(message)) return 'updated';
  if (typeof message === 'string' && /\bcreated$/i.test(message)) return 'created';
  return method === 'post' ? 'created' : 'updated';
}

/** The names of the top-level fields of a body; their values are never kept. */
export function fieldNames(body: unknown): string[] {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return [];
  return Object.keys(body)
    .filter((key) => (body as Record<string, unknown>)[key] !== undefined)
    .sort();
}

/** A job's move or change, with what it was before (`from`) and is now. */
export function jobEvent(
  job: {
    id: string;
    workspaceId: string;
    releaseId?: string | null;
    runbookRunId?: string | null;
    deploymentId?: string | null;
    status: string;
    message?: string | null;
  },
  from: string,
  changes: string[],
): AuditEventInput {
  return {
    workspaceId: job.workspaceId,
    deploymentId: job.deploymentId ?? null,
    record: { type: 'job', id: job.id },
    action: from === job.status ? 'job.updated' : 'job.status_changed',
    changes,
    details: {
      jobId: job.id,
      ...(job.releaseId ? { releaseId: job.releaseId } : {}),
      ...(job.runbookRunId ? { workflowRunId: job.runbookRunId } : {}),
      from,
      to: job.status,
      ...(job.message ? { message: job.message.slice(0, MESSAGE_LIMIT) } : {}),
    },
  };
}

/** The columns of a job's row its event names, as statements return them. */
export interface JobEventRow {
  id: string;
  workspace_id: string;
  release_id: string | null;
  workflow_run_id: string | null;
  deployment_id: string | null;
}

/** `jobEvent` of a job a statement moved, from its row and what it is now. */
export function jobRowEvent(
  row: JobEventRow,
  now: { status: string; message?: string | null },
  from: string,
  changes: string[],
): AuditEventInput {
  return jobEvent(
    {
      id: row.id,
      workspaceId: row.workspace_id,
      releaseId: row.release_id,
      runbookRunId: row.workflow_run_id,
      deploymentId: row.deployment_id,
      ...now,
    },
    from,
    changes,
  );
}

const MESSAGE_LIMIT = 500;

/** A release's event: the release and its target's records as its details. */
export function releaseEvent(
  action: string,
  release: ReleaseIdentity,
  details: Record<string, unknown> = {},
): AuditEventInput {
  return {
    workspaceId: release.workspaceId,
    deploymentId: release.deploymentId,
    record: { type: 'release', id: release.id },
    action,
    details: { ...releaseDetails(release), ...details },
  };
}

function releaseDetails(release: ReleaseIdentity) {
  return {
    releaseId: release.id,
    deploymentId: release.deploymentId,
    environmentId: release.environmentId,
    resourceId: release.resourceId,
    versionId: release.versionId,
  };
}

/**
 * What a release's new gate evaluation decided that its previous one had not: it waits for a new
 * reason (`release.waiting`, with the rule and the reason), an approval rule started waiting
 * (`approval.requested`), a policy skip or a hold came to bear (`policy_skip.applied`,
 * `hold.applied`). An evaluation that decides what the previous one did says nothing.
 */
export function evaluationEvents(
  release: ReleaseIdentity,
  previous: GateEvaluation | null,
  next: GateEvaluation,
): AuditEventInput[] {
  const base = {
    workspaceId: release.workspaceId,
    deploymentId: release.deploymentId,
    record: { type: 'release', id: release.id },
  };
  const target = releaseDetails(release);
  const events: AuditEventInput[] = [];
  const waiting = (evaluation: GateEvaluation | null) =>
    evaluation?.decision === 'wait' || evaluation?.decision === 'blocked';
  if (waiting(next) && !(waiting(previous) && previous!.reason === next.reason)) {
    const rule = next.rules.find((r) => r.state !== 'passed');
    events.push({
      ...base,
      action: 'release.waiting',
      details: {
        ...target,
        reason: next.reason,
        decision: next.decision,
        ...(rule ? { rule: ruleRef(rule) } : {}),
      },
    });
  }
  const wasWaiting = new Set(
    (previous?.rules ?? []).filter((r) => r.state === 'waiting' && r.kind === 'anyApproval').map(ruleKey),
  );
  for (const rule of next.rules)
    if (rule.kind === 'anyApproval' && rule.state === 'waiting' && !wasWaiting.has(ruleKey(rule)))
      events.push({ ...base, action: 'approval.requested', details: { ...target, rule: ruleRef(rule) } });
  const bearing = (evaluation: GateEvaluation | null, pick: (rule: RuleEvaluation) => string | undefined) =>
    new Set((evaluation?.rules ?? []).map(pick).filter((id): id is string => id !== undefined));
  const skipsBefore = bearing(previous, (rule) => rule.skipId);
  for (const rule of next.rules)
    if (rule.skipId && !skipsBefore.has(rule.skipId))
      events.push({
        ...base,
        action: 'policy_skip.applied',
        details: { ...target, skipId: rule.skipId, rule: ruleRef(rule) },
      });
  const holding = (rule: RuleEvaluation) =>
    rule.kind === 'hold' && rule.state !== 'passed' ? rule.ruleId : undefined;
  const holdsBefore = bearing(previous, holding);
  for (const rule of next.rules) {
    const holdId = holding(rule);
    if (holdId && !holdsBefore.has(holdId))
      events.push({ ...base, action: 'hold.applied', details: { ...target, holdId, reason: rule.reason } });
  }
  return events;
}

const ruleKey = (rule: RuleEvaluation) => `${rule.kind}/${rule.policyId ?? ''}/${rule.ruleId ?? ''}`;

function ruleRef(rule: RuleEvaluation) {
  return {
    kind: rule.kind,
    ...(rule.policyId ? { policyId: rule.policyId } : {}),
    ...(rule.ruleId ? { ruleId: rule.ruleId } : {}),
    state: rule.state,
    reason: rule.reason,
  };
}

/** The audit's retention when not configured, in days. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 90;
