import type { EntityManager } from '@mikro-orm/postgresql';
import { groupBy } from '../domain/grouping';
import type { JobAgentType } from '../domain/jobAgentTypes';
import {
  planReleaseJobs,
  type JobPlanInput,
  type JobPlanRecords,
  type PlanAgent,
  type PlannedJob,
} from '../domain/jobPlan';
import { isTerminalJobStatus, type JobStatus } from '../domain/jobStatus';
import { isTerminalReleasePhase, type ReleasePhase } from '../domain/releases';
import {
  relationshipReferencesOf,
  type VariableDefinition,
  type VariableSetDefinition,
} from '../domain/variables';
import { newId } from './ids';
import { enabledPolicies, policiesForTarget } from './policyMatching';
import { loadRelatedResources } from './relatedResources';
import type { SecretBox } from './secrets';
import { openConfig, openValue, jobSecrets, resealMetricHeaders, sealedValue } from './sensitiveValues';
import { uuidArray } from './sql';

/**
 * docs/behaviour.md "Flow" step 4: the jobs of releases that may proceed, written with their release target's
 * slot. The slot (`release_target_state.active_release_id`) is taken by compare and set, so at most
 * one release has active jobs on a target. The plan itself is pure (domain/jobPlan.ts); this module
 * loads what it needs and writes it, for one release (`startReleaseJobs`, a workflow whose gates
 * opened) or a whole batch (`createJobs`, the fan-out), with the same few statements.
 */

export interface StartedJob {
  id: string;
  status: JobStatus;
  agentType: JobAgentType | null;
}

export type StartJobsResult =
  | { outcome: 'started'; attempt: number; jobs: StartedJob[] }
  | { outcome: 'busy'; holder: string | null }
  | { outcome: 'finished' };

/** A release as job creation needs it. */
export interface ReleaseRow {
  id: string;
  workspace_id: string;
  deployment_id: string;
  environment_id: string;
  resource_id: string;
  version_id: string;
  phase: ReleasePhase;
  created_at: Date | string;
}

export const RELEASE_ROW_COLUMNS =
  'id, workspace_id, deployment_id, environment_id, resource_id, version_id, phase, created_at';

const targetOrder = (a: ReleaseRow, b: ReleaseRow) =>
  `${a.resource_id}/${a.environment_id}/${a.deployment_id}`.localeCompare(
    `${b.resource_id}/${b.environment_id}/${b.deployment_id}`,
  );

/**
 * Takes the target slot of each release, by compare and set; returns the ids of the releases that
 * hold their target now. Rows are locked in one order (by target), so concurrent batches never
 * deadlock on each other's targets.
 */
export async function takeTargetSlots(
  tx: EntityManager,
  releases: readonly ReleaseRow[],
): Promise<Set<string>> {
  if (releases.length === 0) return new Set();
  const sorted = [...releases].sort(targetOrder);
  const column = (pick: (release: ReleaseRow) => string) => uuidArray(sorted.map(pick));
  const held = await tx.execute<{ active_release_id: string }[]>(
    `INSERT INTO release_target_state (resource_id, environment_id, deployment_id, workspace_id, active_release_id, desired_release_id)
     SELECT resource_id, environment_id, deployment_id, workspace_id, release_id, release_id
       FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[]) WITH ORDINALITY
            AS s(resource_id, environment_id, deployment_id, workspace_id, release_id, n)
      ORDER BY n
     ON CONFLICT (resource_id, environment_id, deployment_id) DO UPDATE
       SET active_release_id = EXCLUDED.active_release_id, desired_release_id = EXCLUDED.desired_release_id, updated_at = now()
       WHERE release_target_state.active_release_id IS NULL
          OR release_target_state.active_release_id = EXCLUDED.active_release_id
     RETURNING active_release_id`,
    [
      column((r) => r.resource_id),
      column((r) => r.environment_id),
      column((r) => r.deployment_id),
      column((r) => r.workspace_id),
      column((r) => r.id),
    ],
  );
  return new Set(held.map((row) => row.active_release_id));
}

interface RecordsRow extends Omit<JobPlanRecords, 'deployment' | 'version'> {
  release_id: string;
  deployment: Omit<JobPlanRecords['deployment'], 'jobAgents'> & {
    jobAgents: { ref: string; config: Record<string, unknown>; selector?: string }[];
  };
  version: JobPlanRecords['version'];
}

interface VariableRow {
  deployment_id: string;
  key: string;
  sensitive: boolean;
  default_value: unknown;
  values: VariableDefinition['values'] | null;
}

/** Opens each stored secret once per batch, however many jobs share it. */
function once<T>(open: (key: string) => T): (key: string) => T {
  const opened = new Map<string, T>();
  return (key) => {
    if (!opened.has(key)) opened.set(key, open(key));
    return opened.get(key)!;
  };
}

interface VariableSetRow extends Omit<VariableSetDefinition, 'variables'> {
  workspace_id: string;
  variables: VariableSetDefinition['variables'];
}

/** A version that is not stored, whose jobs a deployment plan computes; its secrets in clear. */
export type ProposedVersion = JobPlanRecords['version'];

/**
 * The plan inputs of many releases, read in six queries whatever their number (and one more per
 * workspace, for its policies). Read from the rows given, not from the release table, so a plan
 * can pass would-be releases of a `proposed` version that is not stored either.
 */
export async function loadPlanInputs(
  tx: EntityManager,
  box: SecretBox,
  releases: readonly ReleaseRow[],
  proposed?: ProposedVersion,
): Promise<Map<string, JobPlanInput>> {
  const column = (pick: (release: ReleaseRow) => string) => uuidArray(releases.map(pick));
  const records = await tx.execute<RecordsRow[]>(
    `SELECT rl.id AS release_id,
            json_build_object('id', w.id, 'name', w.name, 'slug', w.slug) AS workspace,
            json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'description', d.description, 'metadata', d.metadata,
                              'resourceSelector', d.resource_selector, 'jobAgents', d.job_agents,
                              'jobAgentSelector', d.job_agent_selector, 'jobAgentConfig', d.job_agent_config) AS deployment,
            json_build_object('id', e.id, 'name', e.name, 'description', e.description, 'metadata', e.metadata) AS environment,
            json_build_object('id', r.id, 'name', r.name, 'version', r.version, 'kind', r.kind, 'identifier', r.identifier,
                              'config', r.config, 'metadata', r.metadata) AS resource,
            json_build_object('id', v.id, 'tag', v.tag, 'name', v.name, 'status', v.status, 'config', v.config,
                              'jobAgentConfig', v.job_agent_config, 'metadata', v.metadata, 'createdAt', v.created_at) AS version
       FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[])
              AS rl(id, workspace_id, deployment_id, environment_id, resource_id, version_id)
       JOIN workspace w ON w.id = rl.workspace_id
       JOIN deployment d ON d.id = rl.deployment_id
       JOIN environment e ON e.id = rl.environment_id
       JOIN resource r ON r.id = rl.resource_id
       LEFT JOIN deployment_version v ON v.id = rl.version_id`,
    [
      column((r) => r.id),
      column((r) => r.workspace_id),
      column((r) => r.deployment_id),
      column((r) => r.environment_id),
      column((r) => r.resource_id),
      column((r) => r.version_id),
    ],
  );
  const deploymentIds = uuidArray([...new Set(releases.map((release) => release.deployment_id))]);
  const variables = await tx.execute<VariableRow[]>(
    `SELECT dv.deployment_id, dv.key, dv.sensitive, dv.default_value,
            (SELECT json_agg(json_build_object('id', vv.id, 'priority', vv.priority, 'value', vv.value,
                      'reference', vv.reference, 'resourceSelector', vv.resource_selector, 'sensitive', vv.sensitive))
               FROM deployment_variable_value vv WHERE vv.variable_id = dv.id) AS values
       FROM deployment_variable dv WHERE dv.deployment_id = ANY(?::uuid[]) ORDER BY dv.key`,
    [deploymentIds],
  );
  const resourceVariables = await tx.execute<
    { resource_id: string; key: string; value: unknown; sensitive: boolean }[]
  >(`SELECT resource_id, key, value, sensitive FROM resource_variable WHERE resource_id = ANY(?::uuid[])`, [
    uuidArray([...new Set(releases.map((release) => release.resource_id))]),
  ]);
  const workspaceIds = [...new Set(releases.map((release) => release.workspace_id))];
  const agents = await tx.execute<(PlanAgent & { workspace_id: string })[]>(
    `SELECT id, name, type, config, metadata, workspace_id FROM job_agent WHERE workspace_id = ANY(?::uuid[])`,
    [uuidArray(workspaceIds)],
  );
  // Every set of each workspace: which ones match is decided per release target, by the plan.
  const variableSets = await tx.execute<VariableSetRow[]>(
    `SELECT s.id, s.workspace_id, s.name, s.priority, s.selector,
            COALESCE((SELECT json_agg(json_build_object('key', v.key, 'value', v.value, 'reference', v.reference,
                                                        'sensitive', v.sensitive) ORDER BY v.key)
                        FROM variable_set_variable v WHERE v.variable_set_id = s.id), '[]') AS variables
       FROM variable_set s WHERE s.workspace_id = ANY(?::uuid[])`,
    [uuidArray(workspaceIds)],
  );
  const policies = new Map<string, Awaited<ReturnType<typeof enabledPolicies>>>();
  for (const workspaceId of workspaceIds) policies.set(workspaceId, await enabledPolicies(tx, workspaceId));

  // Every owner of a sealed value here (deployment, resource, version) is in its release's workspace.
  const workspaceOf = new Map(
    releases.flatMap((release) =>
      [release.deployment_id, release.resource_id, release.version_id].map((id) => [
        id,
        release.workspace_id,
      ]),
    ),
  );
  const secretsOf = (kind: 'deployment' | 'resource' | 'version', id: string) =>
    box.forRecord(workspaceOf.get(id)!, kind, id);
  const variablesByDeployment = groupBy(variables, (row) => row.deployment_id);
  const variablesByResource = groupBy(resourceVariables, (row) => row.resource_id);
  const agentsByWorkspace = groupBy(agents, (agent) => agent.workspace_id);
  const variableSetsByWorkspace = groupBy(variableSets, (set) => set.workspace_id);
  const definitionsOf = once((deploymentId) => {
    const secrets = secretsOf('deployment', deploymentId);
    return (variablesByDeployment.get(deploymentId) ?? []).map((row): VariableDefinition => ({
      key: row.key,
      sensitive: row.sensitive,
      defaultValue:
        row.default_value === null ? undefined : openValue(secrets, row.default_value, row.sensitive),
      values: (row.values ?? []).map((value) => ({
        ...value,
        value: value.value === null ? undefined : openValue(secrets, value.value, value.sensitive),
      })),
    }));
  });
  const resourceVariablesOf = once((resourceId) =>
    (variablesByResource.get(resourceId) ?? []).map(({ key, value, sensitive }) => ({
      key,
      sensitive,
      value: openValue(secretsOf('resource', resourceId), value, sensitive),
    })),
  );
  const variableSetsOf = once((workspaceId) =>
    (variableSetsByWorkspace.get(workspaceId) ?? []).map(
      ({ id, name, priority, selector, variables }): VariableSetDefinition => {
        const secrets = box.forRecord(workspaceId, 'variable_set', id);
        return {
          id,
          name,
          priority,
          selector,
          variables: variables.map((variable) => ({
            ...variable,
            value:
              variable.value === null ? undefined : openValue(secrets, variable.value, variable.sensitive),
          })),
        };
      },
    ),
  );
  const agentsOf = once((workspaceId) =>
    (agentsByWorkspace.get(workspaceId) ?? []).map(({ id, name, type, config, metadata }) => ({
      id,
      name,
      type,
      metadata,
      config: openConfig(box.forRecord(workspaceId, 'job_agent', id), config),
    })),
  );
  const recordsOf = new Map(records.map((row) => [row.release_id, row]));
  const deployments = new Map(records.map((row) => [row.deployment.id, row.deployment]));
  const versions = new Map(records.map((row) => [row.version.id, row.version]));
  const openedDeployment = once((deploymentId) => {
    const deployment = deployments.get(deploymentId)!;
    return {
      ...deployment,
      jobAgentConfig: openConfig(secretsOf('deployment', deploymentId), deployment.jobAgentConfig ?? {}),
      jobAgents: deployment.jobAgents.map((entry) => ({
        ...entry,
        config: openConfig(secretsOf('deployment', deploymentId), entry.config),
      })),
    };
  });
  const openedVersion = once((versionId) => {
    if (proposed) return proposed;
    const version = versions.get(versionId)!;
    return {
      ...version,
      jobAgentConfig: openConfig(secretsOf('version', versionId), version.jobAgentConfig),
    };
  });

  const related = await loadRelatedResources(
    tx,
    releases.flatMap((release) => {
      const references = relationshipReferencesOf(
        definitionsOf(release.deployment_id),
        variableSetsOf(release.workspace_id),
      );
      return references.size > 0
        ? [
            {
              releaseId: release.id,
              workspaceId: release.workspace_id,
              resource: recordsOf.get(release.id)!.resource,
              references,
            },
          ]
        : [];
    }),
  );

  return new Map(
    releases.map((release) => {
      const row = recordsOf.get(release.id)!;
      const matched = policiesForTarget(policies.get(release.workspace_id)!, row);
      return [
        release.id,
        {
          release: { id: release.id, createdAt: new Date(release.created_at).toISOString() },
          records: {
            workspace: row.workspace,
            deployment: openedDeployment(release.deployment_id),
            environment: row.environment,
            resource: row.resource,
            version: openedVersion(release.version_id),
          },
          variables: {
            definitions: definitionsOf(release.deployment_id),
            resource: resourceVariablesOf(release.resource_id),
            sets: variableSetsOf(release.workspace_id),
          },
          related: related.get(release.id),
          agents: agentsOf(release.workspace_id),
          verifications: matched.flatMap((policy) =>
            policy.rules.flatMap((rule) =>
              rule.verification
                ? [
                    {
                      policyId: policy.id,
                      ruleId: rule.id,
                      triggerOn: rule.verification.triggerOn,
                      metrics: resealMetricHeaders(
                        rule.verification.metrics,
                        box.forRecord(release.workspace_id, 'policy', policy.id),
                        jobSecrets(box, { workspaceId: release.workspace_id, releaseId: release.id }),
                      ),
                    },
                  ]
                : [],
            ),
          ),
        },
      ];
    }),
  );
}

/**
 * Plans and writes the jobs of releases whose slot is held: the jobs and their verifications, the
 * releases moved to `running`, each target's latest job. Returns each release's jobs.
 */
export async function createJobs(
  tx: EntityManager,
  box: SecretBox,
  releases: readonly { release: ReleaseRow; attempt: number }[],
): Promise<Map<string, StartedJob[]>> {
  if (releases.length === 0) return new Map();
  const inputs = await loadPlanInputs(
    tx,
    box,
    releases.map(({ release }) => release),
  );
  const planned = releases.map(({ release, attempt }) => {
    const secrets = jobSecrets(box, { workspaceId: release.workspace_id, releaseId: release.id });
    const tools = { newId: () => newId(), seal: (value: unknown) => sealedValue(secrets, value) };
    return { release, attempt, jobs: planReleaseJobs(inputs.get(release.id)!, tools) };
  });
  const jobRows = planned.flatMap(({ release, attempt, jobs }) =>
    jobs.map((job: PlannedJob) => ({
      id: job.id,
      workspace_id: release.workspace_id,
      release_id: release.id,
      deployment_id: release.deployment_id,
      environment_id: release.environment_id,
      resource_id: release.resource_id,
      job_agent_id: job.agent?.id ?? null,
      agent_type: job.agent?.type ?? null,
      agent_entry: job.agentEntry,
      attempt,
      status: job.status,
      message: job.message,
      job_agent_config: job.config,
      dispatch_context: job.dispatchContext,
      ended: isTerminalJobStatus(job.status),
    })),
  );
  await tx.execute(
    `INSERT INTO job (id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id, agent_type,
                      agent_entry, attempt, status, message, job_agent_config, dispatch_context, completed_at)
     SELECT id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id, agent_type,
            agent_entry, attempt, status, message, job_agent_config, dispatch_context, CASE WHEN ended THEN now() END
       FROM jsonb_to_recordset(?::jsonb) AS j(id uuid, workspace_id uuid, release_id uuid, deployment_id uuid,
            environment_id uuid, resource_id uuid, job_agent_id uuid, agent_type text, agent_entry int, attempt int,
            status text, message text, job_agent_config jsonb, dispatch_context jsonb, ended boolean)`,
    [JSON.stringify(jobRows)],
  );
  const verificationRows = planned.flatMap(({ release, jobs }) =>
    jobs.flatMap((job) =>
      job.verifications.map((v) => ({
        id: v.id,
        workspace_id: release.workspace_id,
        job_id: job.id,
        policy_id: v.policyId,
        rule_id: v.ruleId,
        trigger: v.triggerOn,
        metrics: v.metrics,
      })),
    ),
  );
  if (verificationRows.length > 0) {
    await tx.execute(
      `INSERT INTO job_verification (id, workspace_id, job_id, policy_id, rule_id, trigger, metrics)
       SELECT id, workspace_id, job_id, policy_id, rule_id, trigger, metrics
         FROM jsonb_to_recordset(?::jsonb) AS v(id uuid, workspace_id uuid, job_id uuid, policy_id uuid, rule_id uuid,
              trigger text, metrics jsonb)`,
      [JSON.stringify(verificationRows)],
    );
  }
  const moved = planned.map(({ release, attempt, jobs }) => ({
    id: release.id,
    reason: `attempt ${attempt}: ${jobs.length} job(s) created`,
    resource_id: release.resource_id,
    environment_id: release.environment_id,
    deployment_id: release.deployment_id,
    latest_job_id: jobs[jobs.length - 1]!.id,
  }));
  await tx.execute(
    `WITH moved AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS m(id uuid, reason text, resource_id uuid,
                      environment_id uuid, deployment_id uuid, latest_job_id uuid)),
          running AS (
            UPDATE release r SET phase = 'running', phase_reason = moved.reason, redeploy_requested_at = NULL, redeploy_override_reason = NULL, updated_at = now()
              FROM moved WHERE r.id = moved.id)
     UPDATE release_target_state s SET latest_job_id = moved.latest_job_id, updated_at = now()
       FROM moved
      WHERE s.resource_id = moved.resource_id AND s.environment_id = moved.environment_id
        AND s.deployment_id = moved.deployment_id`,
    [JSON.stringify(moved)],
  );
  return new Map(
    planned.map(({ release, jobs }) => [
      release.id,
      jobs.map((job) => ({ id: job.id, status: job.status, agentType: job.agent?.type ?? null })),
    ]),
  );
}

/**
 * The jobs of one release whose gates opened: `busy` (wait to be woken) when another release holds
 * the target. Idempotent per attempt: a retry after a crash returns the jobs the first try created.
 */
export async function startReleaseJobs(
  em: EntityManager,
  box: SecretBox,
  releaseId: string,
  attempt: number,
): Promise<StartJobsResult> {
  return em.transactional(async (tx) => {
    const [release] = await tx.execute<ReleaseRow[]>(
      `SELECT ${RELEASE_ROW_COLUMNS} FROM release WHERE id = ? FOR UPDATE`,
      [releaseId],
    );
    if (!release || isTerminalReleasePhase(release.phase)) return { outcome: 'finished' };
    const existing = await tx.execute<StartedJob[]>(
      `SELECT id, status, agent_type AS "agentType" FROM job WHERE release_id = ? AND attempt = ? ORDER BY agent_entry NULLS FIRST`,
      [releaseId, attempt],
    );
    if (existing.length > 0) return { outcome: 'started', attempt, jobs: existing };
    if (!(await takeTargetSlots(tx, [release])).has(release.id)) {
      const [holder] = await tx.execute<{ active_release_id: string | null }[]>(
        `SELECT active_release_id FROM release_target_state WHERE resource_id = ? AND environment_id = ? AND deployment_id = ?`,
        [release.resource_id, release.environment_id, release.deployment_id],
      );
      return { outcome: 'busy', holder: holder?.active_release_id ?? null };
    }
    const jobs = await createJobs(tx, box, [{ release, attempt }]);
    return { outcome: 'started', attempt, jobs: jobs.get(release.id)! };
  });
}
