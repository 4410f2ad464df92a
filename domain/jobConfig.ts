import { AGENT_OWNED_KEYS } from './jobAgents';
import type { JobAgentType } from './jobAgentTypes';

/**
 * Job configuration (docs/behaviour.md "Job"): merged from four sources, highest priority first — the version's
 * `jobAgentConfig`, the deployment's agent configuration, the resolved variables, the release
 * context — over the job agent's own configuration. Objects merge key by key; anything else
 * (arrays included) is replaced by the higher source. The agent type's endpoint and credential keys
 * (AGENT_OWNED_KEYS) are the agent's alone: no other source sets or removes them.
 */

export type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function deepMerge(lower: JsonObject, higher: JsonObject): JsonObject {
  const merged: JsonObject = { ...lower };
  for (const [key, value] of Object.entries(higher)) {
    merged[key] =
      isObject(value) && isObject(merged[key]) ? deepMerge(merged[key] as JsonObject, value) : value;
  }
  return merged;
}

export interface ReleaseContext {
  releaseId: string;
  deploymentSlug: string;
  environmentName: string;
  resourceIdentifier: string;
  resourceName: string;
  versionTag: string;
}

export interface ConfigSources {
  agentType: JobAgentType;
  agent: JsonObject;
  releaseContext: ReleaseContext;
  variables: JsonObject;
  deploymentEntry: JsonObject;
  version: JsonObject;
}

export function mergeJobConfig(sources: ConfigSources): JsonObject {
  const merged = [
    sources.releaseContext as unknown as JsonObject,
    sources.variables,
    sources.deploymentEntry,
    sources.version,
  ].reduce(deepMerge, sources.agent);
  for (const key of AGENT_OWNED_KEYS[sources.agentType]) {
    if (key in sources.agent) merged[key] = sources.agent[key];
    else delete merged[key];
  }
  return merged;
}
