/**
 * Job configuration (SPEC "Job"): merged from four sources, highest priority first — the version's
 * `jobAgentConfig`, the deployment's agent configuration, the resolved variables, the release
 * context — over the job agent's own configuration. Objects merge key by key; anything else
 * (arrays included) is replaced by the higher source.
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
  agent: JsonObject;
  releaseContext: ReleaseContext;
  variables: JsonObject;
  deploymentEntry: JsonObject;
  version: JsonObject;
}

export function mergeJobConfig(sources: ConfigSources): JsonObject {
  return [
    sources.releaseContext as unknown as JsonObject,
    sources.variables,
    sources.deploymentEntry,
    sources.version,
  ].reduce(deepMerge, sources.agent);
}
