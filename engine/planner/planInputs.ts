import type { EntityManager } from '@mikro-orm/postgresql';
import { groupBy } from '../../domain/grouping';
import { RULE_DEFAULTS } from '../../domain/ruleDefaults';
import type { JobPlanInput, JobPlanRecords, PlanAgent } from '../../domain/jobPlan';
import {
  relationshipReferencesOf,
  type VariableDefinition,
  type VariableSetDefinition,
} from '../../domain/variables';
import type { ReleaseRow } from './releaseRows';
import { enabledPolicies, policiesForTarget, type MatchedPolicy } from '../eligibility/policyMatching';
import { loadRelatedResources } from './relatedResources';
import type { SecretBox } from '../../db/secrets';
import { jobSecrets, openConfig, openValue, resealMetricHeaders } from '../../db/sensitiveValues';
import { uuidArray } from '../../db/sql';

/**
 * What the job plan of each release reads (domain/jobPlan.ts), in three steps: the stored rows,
 * read set-based whatever the batch's size (`readPlanRows`, SQL only, secrets still sealed); the
 * one step where sealed values are opened, each once per batch (`openPlanRows`); and the
 * assembly of each release's input from them (`assemblePlanInput`).
 */

/** A version that is not stored, whose jobs a deployment plan computes; its secrets in clear. */
export type ProposedVersion = JobPlanRecords['version'];

/** What the readers need of the database: statements, nothing else. */
type SqlReader = Pick<EntityManager, 'execute'>;

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

interface ResourceVariableRow {
  resource_id: string;
  key: string;
  value: unknown;
  sensitive: boolean;
}

interface VariableSetRow extends Omit<VariableSetDefinition, 'variables'> {
  workspace_id: string;
  variables: VariableSetDefinition['variables'];
}

/** The stored rows of a batch's plans, grouped by what owns them; sealed values still sealed. */
interface PlanRows {
  recordsOf: Map<string, RecordsRow>;
  variablesOf: Map<string, VariableRow[]>;
  resourceVariablesOf: Map<string, ResourceVariableRow[]>;
  agentsOf: Map<string, (PlanAgent & { workspace_id: string })[]>;
  variableSetsOf: Map<string, VariableSetRow[]>;
  policiesOf: Map<string, (MatchedPolicy & { selector: string })[]>;
}

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
  const rows = await readPlanRows(tx, releases);
  const opened = openPlanRows(box, releases, rows, proposed);
  const related = await loadRelatedResources(
    tx,
    releases.flatMap((release) => {
      const references = relationshipReferencesOf(
        opened.definitionsOf(release.deployment_id),
        opened.variableSetsOf(release.workspace_id),
      );
      if (references.size === 0) return [];
      const resource = rows.recordsOf.get(release.id)!.resource;
      return [{ releaseId: release.id, workspaceId: release.workspace_id, resource, references }];
    }),
  );
  return new Map(
    releases.map((release) => [
      release.id,
      assemblePlanInput(release, rows, opened, related.get(release.id)),
    ]),
  );
}

async function readPlanRows(sql: SqlReader, releases: readonly ReleaseRow[]): Promise<PlanRows> {
  const column = (pick: (release: ReleaseRow) => string) => uuidArray(releases.map(pick));
  const distinct = (pick: (release: ReleaseRow) => string) => uuidArray([...new Set(releases.map(pick))]);
  const records = await sql.execute<RecordsRow[]>(
    `SELECT rl.id AS release_id,
            json_build_object('id', w.id, 'name', w.name, 'slug', w.slug) AS workspace,
            json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'description', d.description, 'metadata', d.metadata,
                              'resourceSelector', d.resource_selector, 'jobAgents', d.job_agents,
                              'jobAgentSelector', d.job_agent_selector, 'jobAgentConfig', d.job_agent_config) AS deployment,
            json_build_object('id', e.id, 'name', e.name, 'description', e.description, 'metadata', e.metadata,
                              'resourceSelector', e.resource_selector, 'createdAt', e.created_at) AS environment,
            json_build_object('id', r.id, 'name', r.name, 'version', r.version, 'kind', r.kind, 'identifier', r.identifier,
                              'config', r.config, 'metadata', r.metadata, 'workspaceId', r.workspace_id,
                              'createdAt', r.created_at) AS resource,
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
  const variables = await sql.execute<VariableRow[]>(
    `SELECT dv.deployment_id, dv.key, dv.sensitive, dv.default_value,
            (SELECT json_agg(json_build_object('id', vv.id, 'priority', vv.priority, 'value', vv.value,
                      'reference', vv.reference, 'resourceSelector', vv.resource_selector, 'sensitive', vv.sensitive))
               FROM deployment_variable_value vv WHERE vv.variable_id = dv.id) AS values
       FROM deployment_variable dv WHERE dv.deployment_id = ANY(?::uuid[]) ORDER BY dv.key`,
    [distinct((r) => r.deployment_id)],
  );
  const resourceVariables = await sql.execute<ResourceVariableRow[]>(
    `SELECT resource_id, key, value, sensitive FROM resource_variable WHERE resource_id = ANY(?::uuid[])`,
    [distinct((r) => r.resource_id)],
  );
  const workspaceIds = [...new Set(releases.map((release) => release.workspace_id))];
  const agents = await sql.execute<(PlanAgent & { workspace_id: string })[]>(
    `SELECT id, name, type, config, metadata, workspace_id FROM job_agent WHERE workspace_id = ANY(?::uuid[])`,
    [uuidArray(workspaceIds)],
  );
  // Every set of each workspace: which ones match is decided per release target, by the plan.
  const variableSets = await sql.execute<VariableSetRow[]>(
    `SELECT s.id, s.workspace_id, s.name, s.priority, s.selector,
            COALESCE((SELECT json_agg(json_build_object('key', v.key, 'value', v.value, 'reference', v.reference,
                                                        'sensitive', v.sensitive) ORDER BY v.key)
                        FROM variable_set_variable v WHERE v.variable_set_id = s.id), '[]') AS variables
       FROM variable_set s WHERE s.workspace_id = ANY(?::uuid[])`,
    [uuidArray(workspaceIds)],
  );
  const policiesOf: PlanRows['policiesOf'] = new Map();
  for (const workspaceId of workspaceIds)
    policiesOf.set(workspaceId, await enabledPolicies(sql, workspaceId));
  return {
    recordsOf: new Map(records.map((row) => [row.release_id, row])),
    variablesOf: groupBy(variables, (row) => row.deployment_id),
    resourceVariablesOf: groupBy(resourceVariables, (row) => row.resource_id),
    agentsOf: groupBy(agents, (agent) => agent.workspace_id),
    variableSetsOf: groupBy(variableSets, (set) => set.workspace_id),
    policiesOf,
  };
}

/** Remembers what `open` answered for each key: each stored secret is opened once per batch. */
function once<T>(open: (key: string) => T): (key: string) => T {
  const opened = new Map<string, T>();
  return (key) => {
    if (!opened.has(key)) opened.set(key, open(key));
    return opened.get(key)!;
  };
}

type OpenedPlanRows = ReturnType<typeof openPlanRows>;

/** The one step where a plan's sealed values are opened, by record, each once per batch. */
function openPlanRows(
  box: SecretBox,
  releases: readonly ReleaseRow[],
  rows: PlanRows,
  proposed?: ProposedVersion,
) {
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
  const deployments = new Map([...rows.recordsOf.values()].map((row) => [row.deployment.id, row.deployment]));
  const versions = new Map([...rows.recordsOf.values()].map((row) => [row.version.id, row.version]));
  return {
    definitionsOf: once((id) => openDefinitions(secretsOf('deployment', id), rows.variablesOf.get(id) ?? [])),
    resourceVariablesOf: once((id) =>
      openResourceVariables(secretsOf('resource', id), rows.resourceVariablesOf.get(id) ?? []),
    ),
    variableSetsOf: once((workspaceId) =>
      openVariableSets(box, workspaceId, rows.variableSetsOf.get(workspaceId) ?? []),
    ),
    agentsOf: once((workspaceId) => openAgents(box, workspaceId, rows.agentsOf.get(workspaceId) ?? [])),
    deploymentOf: once((id) => openDeployment(secretsOf('deployment', id), deployments.get(id)!)),
    versionOf: once((id) => proposed ?? openVersion(secretsOf('version', id), versions.get(id)!)),
    verificationsOf: (release: ReleaseRow, policies: MatchedPolicy[]) =>
      resealVerifications(box, release, policies),
  };
}

type RecordSecrets = ReturnType<SecretBox['forRecord']>;

function openDefinitions(secrets: RecordSecrets, rows: VariableRow[]): VariableDefinition[] {
  return rows.map((row) => ({
    key: row.key,
    sensitive: row.sensitive,
    defaultValue:
      row.default_value === null ? undefined : openValue(secrets, row.default_value, row.sensitive),
    values: (row.values ?? []).map((value) => ({
      ...value,
      value: value.value === null ? undefined : openValue(secrets, value.value, value.sensitive),
    })),
  }));
}

function openResourceVariables(secrets: RecordSecrets, rows: ResourceVariableRow[]) {
  return rows.map(({ key, value, sensitive }) => ({
    key,
    sensitive,
    value: openValue(secrets, value, sensitive),
  }));
}

function openVariableSets(
  box: SecretBox,
  workspaceId: string,
  rows: VariableSetRow[],
): VariableSetDefinition[] {
  return rows.map(({ id, name, priority, selector, variables }) => {
    const secrets = box.forRecord(workspaceId, 'variable_set', id);
    return {
      id,
      name,
      priority,
      selector,
      variables: variables.map((variable) => ({
        ...variable,
        value: variable.value === null ? undefined : openValue(secrets, variable.value, variable.sensitive),
      })),
    };
  });
}

function openAgents(box: SecretBox, workspaceId: string, rows: PlanAgent[]): PlanAgent[] {
  return rows.map(({ id, name, type, config, metadata }) => ({
    id,
    name,
    type,
    metadata,
    config: openConfig(box.forRecord(workspaceId, 'job_agent', id), config),
  }));
}

function openDeployment(secrets: RecordSecrets, deployment: RecordsRow['deployment']) {
  return {
    ...deployment,
    jobAgentConfig: openConfig(secrets, deployment.jobAgentConfig ?? {}),
    jobAgents: deployment.jobAgents.map((entry) => ({ ...entry, config: openConfig(secrets, entry.config) })),
  };
}

function openVersion(secrets: RecordSecrets, version: ProposedVersion): ProposedVersion {
  return { ...version, jobAgentConfig: openConfig(secrets, version.jobAgentConfig) };
}

/** A policy's verification metrics, their headers sealed again for the release's jobs. */
function resealVerifications(
  box: SecretBox,
  release: ReleaseRow,
  policies: MatchedPolicy[],
): JobPlanInput['verifications'] {
  return policies.flatMap((policy) =>
    policy.rules.flatMap((rule) =>
      rule.verification
        ? [
            {
              policyId: policy.id,
              ruleId: rule.id,
              triggerOn: rule.verification.triggerOn ?? RULE_DEFAULTS.triggerOn,
              metrics: resealMetricHeaders(
                rule.verification.metrics,
                box.forRecord(release.workspace_id, 'policy', policy.id),
                jobSecrets(box, { workspaceId: release.workspace_id, releaseId: release.id }),
              ),
            },
          ]
        : [],
    ),
  );
}

/** One release's plan input, from the batch's rows and opened values. */
function assemblePlanInput(
  release: ReleaseRow,
  rows: PlanRows,
  opened: OpenedPlanRows,
  related: JobPlanInput['related'],
): JobPlanInput {
  const row = rows.recordsOf.get(release.id)!;
  const policies = policiesForTarget(rows.policiesOf.get(release.workspace_id)!, row);
  return {
    release: { id: release.id, createdAt: new Date(release.created_at).toISOString() },
    records: {
      workspace: row.workspace,
      deployment: opened.deploymentOf(release.deployment_id),
      environment: row.environment,
      resource: row.resource,
      version: opened.versionOf(release.version_id),
    },
    variables: {
      definitions: opened.definitionsOf(release.deployment_id),
      resource: opened.resourceVariablesOf(release.resource_id),
      sets: opened.variableSetsOf(release.workspace_id),
    },
    related,
    agents: opened.agentsOf(release.workspace_id),
    verifications: opened.verificationsOf(release, policies),
  };
}
