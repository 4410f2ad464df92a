import type { EntityManager } from '@mikro-orm/postgresql';
import { mergeJobConfig, type JsonObject, type ReleaseContext } from '../domain/jobConfig';
import type { JobAgentType } from '../domain/jobAgents';
import type { JobStatus } from '../domain/jobStatus';
import { isTerminalReleasePhase, type ReleasePhase } from '../domain/releases';
import { selectorContext, selectorMatches } from '../domain/selectors';
import { SENSITIVE_CONFIG_KEYS } from '../domain/sensitive';
import { resolveVariables, type ResolvedVariable, type VariableDefinition } from '../domain/variables';
import type { JobAgentEntry } from './entities';
import { newId } from './ids';
import { enabledPolicies, policiesForTarget } from './policyMatching';
import type { SecretBox } from './secrets';
import { openConfig, openValue, sealedValue } from './sensitiveValues';

/**
 * SPEC "Flow" step 4: the jobs of a release that may proceed, created in one transaction with the
 * release target's slot. The slot (`release_target_state.active_release_id`) is taken by compare and
 * set, so at most one release has active jobs on a target; a release that finds it taken gets
 * `busy` and waits to be woken. Idempotent per attempt: a retry after a crash returns the jobs the
 * first try created.
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

interface ReleaseRow {
  id: string;
  workspace_id: string;
  deployment_id: string;
  environment_id: string;
  resource_id: string;
  version_id: string;
  phase: ReleasePhase;
  created_at: Date;
}

interface Records {
  workspace: { id: string; name: string; slug: string };
  deployment: {
    id: string;
    name: string;
    slug: string;
    description: string | null;
    metadata: Record<string, string>;
    resourceSelector: string | null;
    jobAgents: JobAgentEntry[];
  };
  environment: { id: string; name: string; description: string | null; metadata: Record<string, string> };
  resource: {
    id: string;
    name: string;
    version: string;
    kind: string;
    identifier: string;
    config: Record<string, unknown>;
    metadata: Record<string, string>;
  };
  version: {
    id: string;
    tag: string;
    name: string | null;
    status: string;
    config: Record<string, unknown>;
    jobAgentConfig: Record<string, unknown>;
    metadata: Record<string, string>;
    createdAt: string;
  };
}

async function loadRecords(em: EntityManager, release: ReleaseRow): Promise<Records> {
  const [row] = await em.execute<Records[]>(
    `SELECT json_build_object('id', w.id, 'name', w.name, 'slug', w.slug) AS workspace,
            json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'description', d.description, 'metadata', d.metadata,
                              'resourceSelector', d.resource_selector, 'jobAgents', d.job_agents) AS deployment,
            json_build_object('id', e.id, 'name', e.name, 'description', e.description, 'metadata', e.metadata) AS environment,
            json_build_object('id', r.id, 'name', r.name, 'version', r.version, 'kind', r.kind, 'identifier', r.identifier,
                              'config', r.config, 'metadata', r.metadata) AS resource,
            json_build_object('id', v.id, 'tag', v.tag, 'name', v.name, 'status', v.status, 'config', v.config,
                              'jobAgentConfig', v.job_agent_config, 'metadata', v.metadata, 'createdAt', v.created_at) AS version
       FROM workspace w, deployment d, environment e, resource r, deployment_version v
      WHERE w.id = ? AND d.id = ? AND e.id = ? AND r.id = ? AND v.id = ?`,
    [
      release.workspace_id,
      release.deployment_id,
      release.environment_id,
      release.resource_id,
      release.version_id,
    ],
  );
  return row!;
}

async function loadVariables(
  em: EntityManager,
  box: SecretBox,
  release: ReleaseRow,
): Promise<{
  definitions: VariableDefinition[];
  own: { key: string; value: unknown; sensitive: boolean }[];
}> {
  const rows = await em.execute<
    { key: string; sensitive: boolean; default_value: unknown; values: VariableDefinition['values'] | null }[]
  >(
    `SELECT dv.key, dv.sensitive, dv.default_value,
            (SELECT json_agg(json_build_object('id', vv.id, 'priority', vv.priority, 'value', vv.value,
                      'reference', vv.reference, 'resourceSelector', vv.resource_selector, 'sensitive', vv.sensitive))
               FROM deployment_variable_value vv WHERE vv.variable_id = dv.id) AS values
       FROM deployment_variable dv WHERE dv.deployment_id = ? ORDER BY dv.key`,
    [release.deployment_id],
  );
  const own = await em.execute<{ key: string; value: unknown; sensitive: boolean }[]>(
    `SELECT key, value, sensitive FROM resource_variable WHERE resource_id = ?`,
    [release.resource_id],
  );
  return {
    definitions: rows.map((row) => ({
      key: row.key,
      sensitive: row.sensitive,
      defaultValue: row.default_value === null ? undefined : openValue(box, row.default_value, row.sensitive),
      values: (row.values ?? []).map((value) => ({
        ...value,
        value: value.value === null ? undefined : openValue(box, value.value, value.sensitive),
      })),
    })),
    own: own.map((variable) => ({ ...variable, value: openValue(box, variable.value, variable.sensitive) })),
  };
}

/** Variables as the job keeps them: secrets sealed. */
function variableSnapshot(box: SecretBox, variables: ResolvedVariable[]): JsonObject {
  return Object.fromEntries(variables.map((v) => [v.key, v.sensitive ? sealedValue(box, v.value) : v.value]));
}

/** A merged configuration as the job keeps it: secret keys and keys of sensitive variables sealed. */
function configSnapshot(box: SecretBox, config: JsonObject, variables: ResolvedVariable[]): JsonObject {
  const secretKeys = new Set([
    ...SENSITIVE_CONFIG_KEYS,
    ...variables.filter((v) => v.sensitive).map((v) => v.key),
  ]);
  return Object.fromEntries(
    Object.entries(config).map(([key, value]) => [
      key,
      secretKeys.has(key) ? sealedValue(box, value) : value,
    ]),
  );
}

interface AgentRow {
  id: string;
  name: string;
  type: JobAgentType;
  config: Record<string, unknown>;
}

export async function startReleaseJobs(
  em: EntityManager,
  box: SecretBox,
  releaseId: string,
  attempt: number,
): Promise<StartJobsResult> {
  return em.transactional(async (tx) => {
    const [release] = await tx.execute<ReleaseRow[]>(
      `SELECT id, workspace_id, deployment_id, environment_id, resource_id, version_id, phase, created_at
         FROM release WHERE id = ? FOR UPDATE`,
      [releaseId],
    );
    if (!release || isTerminalReleasePhase(release.phase)) return { outcome: 'finished' };
    const existing = await tx.execute<StartedJob[]>(
      `SELECT id, status, agent_type AS "agentType" FROM job WHERE release_id = ? AND attempt = ? ORDER BY agent_entry NULLS FIRST`,
      [releaseId, attempt],
    );
    if (existing.length > 0) return { outcome: 'started', attempt, jobs: existing };

    const slot = await tx.execute<{ active_release_id: string }[]>(
      `INSERT INTO release_target_state (resource_id, environment_id, deployment_id, workspace_id, active_release_id, desired_release_id)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (resource_id, environment_id, deployment_id) DO UPDATE
         SET active_release_id = EXCLUDED.active_release_id, desired_release_id = EXCLUDED.desired_release_id, updated_at = now()
         WHERE release_target_state.active_release_id IS NULL
            OR release_target_state.active_release_id = EXCLUDED.active_release_id
       RETURNING active_release_id`,
      [
        release.resource_id,
        release.environment_id,
        release.deployment_id,
        release.workspace_id,
        release.id,
        release.id,
      ],
    );
    if (slot.length === 0) {
      const [holder] = await tx.execute<{ active_release_id: string | null }[]>(
        `SELECT active_release_id FROM release_target_state WHERE resource_id = ? AND environment_id = ? AND deployment_id = ?`,
        [release.resource_id, release.environment_id, release.deployment_id],
      );
      return { outcome: 'busy', holder: holder?.active_release_id ?? null };
    }

    const records = await loadRecords(tx, release);
    const { definitions, own } = await loadVariables(tx, box, release);
    const resourceContext = { resource: selectorContext.resource(records.resource) };
    const variables = resolveVariables(
      definitions,
      own,
      {
        workspace: records.workspace,
        deployment: records.deployment,
        environment: records.environment,
        resource: records.resource,
        version: { ...records.version, jobAgentConfig: undefined },
      },
      (selector) => selectorMatches('resource', selector, resourceContext),
    );
    const agents = await tx.execute<AgentRow[]>(
      `SELECT id, name, type, config FROM job_agent WHERE workspace_id = ?`,
      [release.workspace_id],
    );
    const policies = policiesForTarget(await enabledPolicies(tx, release.workspace_id), records);
    const verificationRules = policies.flatMap((policy) =>
      policy.rules.flatMap((rule) =>
        rule.verification ? [{ policyId: policy.id, ruleId: rule.id, ...rule.verification }] : [],
      ),
    );

    const releaseContext: ReleaseContext = {
      releaseId: release.id,
      deploymentSlug: records.deployment.slug,
      environmentName: records.environment.name,
      resourceIdentifier: records.resource.identifier,
      resourceName: records.resource.name,
      versionTag: records.version.tag,
    };
    const plainVariables = Object.fromEntries(variables.map((v) => [v.key, v.value]));
    const context = {
      deployment: { ...records.deployment, jobAgents: undefined },
      environment: records.environment,
      resource: records.resource,
      release: {
        id: release.id,
        versionId: release.version_id,
        deploymentId: release.deployment_id,
        environmentId: release.environment_id,
        resourceId: release.resource_id,
        createdAt: new Date(release.created_at).toISOString(),
      },
      version: { ...records.version, jobAgentConfig: undefined },
      variables: variableSnapshot(box, variables),
    };

    const entries = records.deployment.jobAgents
      .map((entry, index) => ({ entry, index }))
      .filter(({ entry }) => !entry.selector || selectorMatches('resource', entry.selector, resourceContext));
    const jobs: {
      id: string;
      agent: AgentRow | null;
      entry: number | null;
      status: JobStatus;
      message: string | null;
      config: JsonObject;
    }[] = [];
    if (entries.length === 0) {
      jobs.push({
        id: newId(),
        agent: null,
        entry: null,
        status: 'invalid_job_agent',
        message:
          records.deployment.jobAgents.length === 0
            ? `deployment ${records.deployment.slug} has no job agent`
            : `no job agent of deployment ${records.deployment.slug} serves resource ${records.resource.identifier}`,
        config: {},
      });
    }
    for (const { entry, index } of entries) {
      const agent =
        agents.find((candidate) => candidate.id === entry.ref || candidate.name === entry.ref) ?? null;
      const config = agent
        ? mergeJobConfig({
            agent: openConfig(box, agent.config),
            releaseContext,
            variables: plainVariables,
            deploymentEntry: openConfig(box, entry.config),
            version: openConfig(box, records.version.jobAgentConfig),
          })
        : {};
      jobs.push({
        id: newId(),
        agent,
        entry: index,
        status: agent ? 'pending' : 'invalid_job_agent',
        message: agent ? null : `job agent "${entry.ref}" was not found`,
        config: configSnapshot(box, config, variables),
      });
    }

    for (const job of jobs) {
      const dispatchContext = {
        ...context,
        jobAgent: job.agent ? { id: job.agent.id, name: job.agent.name, type: job.agent.type } : null,
        jobAgentConfig: job.config,
        inputs: {
          jobId: job.id,
          versionTag: records.version.tag,
          environmentName: records.environment.name,
          resourceIdentifier: records.resource.identifier,
        },
      };
      await tx.execute(
        `INSERT INTO job (id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id, agent_type,
                          agent_entry, attempt, status, message, job_agent_config, dispatch_context, completed_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, CASE WHEN ? THEN now() END)`,
        [
          job.id,
          release.workspace_id,
          release.id,
          release.deployment_id,
          release.environment_id,
          release.resource_id,
          job.agent?.id ?? null,
          job.agent?.type ?? null,
          job.entry,
          attempt,
          job.status,
          job.message,
          JSON.stringify(job.config),
          JSON.stringify(dispatchContext),
          job.status !== 'pending',
        ],
      );
      if (job.status !== 'pending') continue;
      for (const rule of verificationRules) {
        await tx.execute(
          `INSERT INTO job_verification (id, workspace_id, job_id, policy_id, rule_id, trigger, metrics)
           VALUES (?, ?, ?, ?, ?, ?, ?::jsonb)`,
          [
            newId(),
            release.workspace_id,
            job.id,
            rule.policyId,
            rule.ruleId,
            rule.triggerOn,
            JSON.stringify(rule.metrics),
          ],
        );
      }
    }
    await tx.execute(
      `UPDATE release SET phase = 'running', phase_reason = ?, redeploy_requested_at = NULL, updated_at = now() WHERE id = ?`,
      [`attempt ${attempt}: ${jobs.length} job(s) created`, release.id],
    );
    await tx.execute(
      `UPDATE release_target_state SET latest_job_id = ?, updated_at = now()
        WHERE resource_id = ? AND environment_id = ? AND deployment_id = ?`,
      [jobs[jobs.length - 1]!.id, release.resource_id, release.environment_id, release.deployment_id],
    );
    return {
      outcome: 'started',
      attempt,
      jobs: jobs.map((job) => ({ id: job.id, status: job.status, agentType: job.agent?.type ?? null })),
    };
  });
}
