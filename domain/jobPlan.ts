import { mergeJobConfig, type JsonObject, type ReleaseContext } from './jobConfig';
import { agentSelectorContext } from './jobAgents';
import type { JobAgentType } from './jobAgentTypes';
import type { JobStatus } from './jobStatus';
import type { VerificationMetric } from './policies';
import { selectorContext, selectorMatches } from './selectors';
import { SENSITIVE_CONFIG_KEYS } from './sensitive';
import { referenceView, resolveVariables, type ResolvedVariable, type VariableSources } from './variables';
import type { z } from 'zod';

/**
 * docs/behaviour.md "Flow" step 4, as a pure plan: the jobs one release gets, with their resolved variables,
 * merged configuration, dispatch context and verifications. The database layer loads the records
 * (secrets opened), takes the target's slot and writes the plan; the same plan serves a release
 * created ready to run by the fan-out and one whose gates opened later.
 */

/** An entry of a deployment's `jobAgents` (docs/behaviour.md "Job agent entry"), its config's secrets opened. */
export interface AgentEntry {
  ref: string;
  config: JsonObject;
  selector?: string;
}

export interface PlanAgent {
  id: string;
  name: string;
  type: JobAgentType;
  /** The agent's own configuration, secrets opened. */
  config: JsonObject;
  metadata?: Record<string, string>;
}

/**
 * A deployment's agent entries: its `jobAgents`, or, when it has none and a `jobAgentSelector`
 * (Ctrlplane's), one entry per agent the selector matches (by name, then id), each with the
 * deployment's `jobAgentConfig`.
 */
export function agentEntries(
  deployment: JobPlanRecords['deployment'],
  agents: readonly PlanAgent[],
): AgentEntry[] {
  const selector = deployment.jobAgentSelector;
  if (deployment.jobAgents.length > 0 || !selector) return deployment.jobAgents;
  return agents
    .filter((agent) => selectorMatches('jobAgent', selector, { jobAgent: agentSelectorContext(agent) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1))
    .map((agent) => ({ ref: agent.id, config: deployment.jobAgentConfig ?? {} }));
}

export interface JobPlanRecords {
  workspace: { id: string; name: string; slug: string };
  deployment: {
    id: string;
    name: string;
    slug: string;
    description: string | null;
    metadata: Record<string, string>;
    resourceSelector: string | null;
    jobAgents: AgentEntry[];
    /** Ctrlplane's alternative to `jobAgents`: CEL over `jobAgent`, with the config those agents get. */
    jobAgentSelector?: string | null;
    jobAgentConfig?: JsonObject;
  };
  environment: {
    id: string;
    name: string;
    description: string | null;
    metadata: Record<string, string>;
    resourceSelector?: string | null;
    createdAt?: string;
  };
  resource: {
    id: string;
    workspaceId?: string;
    createdAt?: string;
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
    /** Secrets opened. */
    jobAgentConfig: JsonObject;
    metadata: Record<string, string>;
    createdAt: string;
  };
}

export interface VerificationSpec {
  policyId: string;
  ruleId: string;
  triggerOn: string;
  metrics: z.infer<typeof VerificationMetric>[];
}

export interface JobPlanInput {
  release: { id: string; createdAt: string };
  records: JobPlanRecords;
  /** The deployment's variables, the resource's own and the workspace's variable sets, secrets opened. */
  variables: VariableSources;
  /** The resources related to the target's resource, by the relationship reference names its variables use. */
  related?: Readonly<Record<string, object>>;
  /** The workspace's job agents. */
  agents: readonly PlanAgent[];
  verifications: readonly VerificationSpec[];
  /**
   * A rollback's variables: those its release's last successful job ran with, used as they were
   * instead of resolving them again (docs/behaviour.md "Rollback").
   */
  restoredVariables?: readonly PlanVariable[];
}

/** A variable as a job carries it: what planning reads of a resolved one. */
export type PlanVariable = Pick<ResolvedVariable, 'key' | 'value' | 'sensitive'>;

/** What the plan needs from outside: fresh ids, and sealing of secrets for storage. */
export interface PlanTools {
  newId(): string;
  seal(value: unknown): unknown;
}

export interface PlannedJob {
  id: string;
  agent: { id: string; name: string; type: JobAgentType } | null;
  /** Index of the deployment's `jobAgents` entry the job runs for. */
  agentEntry: number | null;
  status: JobStatus;
  message: string | null;
  /** Merged configuration, secrets sealed. */
  config: JsonObject;
  /** docs/behaviour.md "Job": the self-contained execution snapshot, secrets sealed. */
  dispatchContext: JsonObject;
  verifications: (VerificationSpec & { id: string })[];
}

/**
 * The status a job is created in. A pull agent's dispatch only queues the job (docs/behaviour.md "Pull job
 * agents"), so it is queued in the transaction that creates it; other agents' jobs wait for
 * their dispatch to run.
 */
export function createdJobStatus(type: JobAgentType): JobStatus {
  return type === 'http-pull' ? 'queued' : 'pending';
}

/** Variables as the job keeps them: secrets sealed. */
function variableSnapshot(tools: PlanTools, variables: readonly PlanVariable[]): JsonObject {
  return Object.fromEntries(variables.map((v) => [v.key, v.sensitive ? tools.seal(v.value) : v.value]));
}

/** A merged configuration as the job keeps it: secret keys and keys of sensitive variables sealed. */
function configSnapshot(
  tools: PlanTools,
  config: JsonObject,
  variables: readonly PlanVariable[],
): JsonObject {
  const secretKeys = new Set([
    ...SENSITIVE_CONFIG_KEYS,
    ...variables.filter((v) => v.sensitive).map((v) => v.key),
  ]);
  return Object.fromEntries(
    Object.entries(config).map(([key, value]) => [key, secretKeys.has(key) ? tools.seal(value) : value]),
  );
}

/** The variables of a release: each key's value from the source that wins on its target (`resolveVariables`). */
export function resolveTargetVariables(input: JobPlanInput): ResolvedVariable[] {
  const { records } = input;
  const resourceContext = { resource: selectorContext.resource(records.resource) };
  const targetContext = {
    ...resourceContext,
    deployment: selectorContext.deployment(records.deployment),
    environment: selectorContext.environment(records.environment),
  };
  return resolveVariables(
    input.variables,
    {
      workspace: referenceView('workspace', records.workspace),
      deployment: referenceView('deployment', records.deployment),
      environment: referenceView('environment', records.environment),
      resource: referenceView('resource', records.resource),
      version: referenceView('version', records.version),
      related: input.related,
    },
    {
      resource: (selector) => selectorMatches('resource', selector, resourceContext),
      target: (selector) => selectorMatches('target', selector, targetContext),
    },
  );
}

/**
 * One job per entry of the deployment's `jobAgents` whose selector matches the resource; an entry
 * whose agent does not exist, or a resource no entry serves, gives a job that ends at once in
 * `invalid_job_agent` with the reason.
 */
export function planReleaseJobs(input: JobPlanInput, tools: PlanTools): PlannedJob[] {
  const { records } = input;
  const variables = input.restoredVariables ?? resolveTargetVariables(input);
  const context = sharedDispatchContext(input, tools, variables);
  return draftJobs(input, tools, variables).map((job) => ({
    ...job,
    dispatchContext: {
      ...context,
      jobAgent: job.agent && agentContext(job.agent, input.agents, tools, variables),
      jobAgentConfig: job.config,
      inputs: {
        jobId: job.id,
        versionTag: records.version.tag,
        environmentName: records.environment.name,
        resourceIdentifier: records.resource.identifier,
      },
    },
    // Verifications are created at dispatch for every agent type (docs/behaviour.md "Job status"); a job that ends at once has none.
    verifications:
      job.status === 'invalid_job_agent'
        ? []
        : input.verifications.map((spec) => ({ ...spec, id: tools.newId() })),
  }));
}

/** The job's agent as Ctrlplane's `JobAgent`: its configuration (secrets sealed) and metadata. */
function agentContext(
  agent: NonNullable<PlannedJob['agent']>,
  agents: readonly PlanAgent[],
  tools: PlanTools,
  variables: readonly PlanVariable[],
) {
  const record = agents.find((candidate) => candidate.id === agent.id);
  return {
    ...agent,
    config: configSnapshot(tools, record?.config ?? {}, variables),
    metadata: record?.metadata ?? {},
  };
}

/** A record's fields without those that hold null: Ctrlplane's clients read an absent value, never null. */
function withoutNulls<T extends object>(record: T): T {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== null)) as T;
}

/**
 * What every job of the release carries in its dispatch context, shaped as Ctrlplane's `DispatchContext`: the
 * records (configurations with their secrets sealed) and the release with its version, variables and target.
 */
function sharedDispatchContext(input: JobPlanInput, tools: PlanTools, variables: readonly PlanVariable[]) {
  const { records, release } = input;
  const { deployment, environment, resource } = records;
  const version = withoutNulls({
    ...records.version,
    name: records.version.name ?? records.version.tag,
    deploymentId: deployment.id,
    jobAgentConfig: configSnapshot(tools, records.version.jobAgentConfig, variables),
  });
  const releaseTarget = {
    resourceId: resource.id,
    environmentId: environment.id,
    deploymentId: deployment.id,
  };
  return {
    deployment: withoutNulls({
      ...deployment,
      jobAgents: undefined,
      jobAgentSelector: deployment.jobAgentSelector ?? '',
      jobAgentConfig: configSnapshot(tools, deployment.jobAgentConfig ?? {}, variables),
    }),
    environment: withoutNulls(environment),
    resource,
    release: {
      id: release.id,
      versionId: records.version.id,
      ...releaseTarget,
      createdAt: release.createdAt,
      version,
      variables: Object.fromEntries(
        variables
          .filter((v) => !v.sensitive && v.value !== null)
          .map((v) => [v.key, typeof v.value === 'object' ? { object: v.value } : v.value]),
      ),
      encryptedVariables: variables.filter((v) => v.sensitive).map((v) => v.key),
      releaseTarget,
    },
    version,
    variables: variableSnapshot(tools, variables),
  };
}

/** The jobs before their dispatch context: one per serving entry, or one that says why there is none. */
function draftJobs(
  input: JobPlanInput,
  tools: PlanTools,
  variables: readonly PlanVariable[],
): Omit<PlannedJob, 'dispatchContext' | 'verifications'>[] {
  const { records, release } = input;
  const resourceContext = { resource: selectorContext.resource(records.resource) };
  const declared = agentEntries(records.deployment, input.agents);
  const entries = declared
    .map((entry, index) => ({ entry, index }))
    .filter(({ entry }) => !entry.selector || selectorMatches('resource', entry.selector, resourceContext));
  if (entries.length === 0) {
    return [
      {
        id: tools.newId(),
        agent: null,
        agentEntry: null,
        status: 'invalid_job_agent',
        message:
          declared.length === 0
            ? `deployment ${records.deployment.slug} has no job agent`
            : `no job agent of deployment ${records.deployment.slug} serves resource ${records.resource.identifier}`,
        config: {},
      },
    ];
  }
  const releaseContext: ReleaseContext = {
    releaseId: release.id,
    deploymentSlug: records.deployment.slug,
    environmentName: records.environment.name,
    resourceIdentifier: records.resource.identifier,
    resourceName: records.resource.name,
    versionTag: records.version.tag,
  };
  const plainVariables = Object.fromEntries(variables.map((v) => [v.key, v.value]));
  return entries.map(({ entry, index }) => {
    const agent = input.agents.find(
      (candidate) => candidate.id === entry.ref || candidate.name === entry.ref,
    );
    const config = agent
      ? mergeJobConfig({
          agentType: agent.type,
          agent: agent.config,
          releaseContext,
          variables: plainVariables,
          deploymentEntry: entry.config,
          version: records.version.jobAgentConfig,
        })
      : {};
    return {
      id: tools.newId(),
      agent: agent ? { id: agent.id, name: agent.name, type: agent.type } : null,
      agentEntry: index,
      status: agent ? createdJobStatus(agent.type) : 'invalid_job_agent',
      message: agent ? null : `job agent "${entry.ref}" was not found`,
      config: configSnapshot(tools, config, variables),
    };
  });
}
