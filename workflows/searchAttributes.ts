import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

/**
 * Custom search attributes on every Flightdeck workflow, so an operator can find a release's
 * history in the Temporal UI by workspace, deployment, environment, resource, version, release or
 * job. One definition serves the dev server's registration flags, the worker's registration on an
 * external cluster, the client that starts workflows and the workflows that upsert them.
 */
export const searchAttributes = {
  workspaceId: defineSearchAttributeKey('FlightdeckWorkspaceId', SearchAttributeType.KEYWORD),
  deploymentId: defineSearchAttributeKey('FlightdeckDeploymentId', SearchAttributeType.KEYWORD),
  environmentId: defineSearchAttributeKey('FlightdeckEnvironmentId', SearchAttributeType.KEYWORD),
  resourceId: defineSearchAttributeKey('FlightdeckResourceId', SearchAttributeType.KEYWORD),
  versionId: defineSearchAttributeKey('FlightdeckVersionId', SearchAttributeType.KEYWORD),
  releaseId: defineSearchAttributeKey('FlightdeckReleaseId', SearchAttributeType.KEYWORD),
  jobIds: defineSearchAttributeKey('FlightdeckJobIds', SearchAttributeType.KEYWORD_LIST),
} as const;

export type SearchAttributeValues = {
  [K in keyof typeof searchAttributes]?: K extends 'jobIds' ? string[] : string;
};

/** Typed pairs for workflow start options and upserts; absent values are left out. */
export function searchAttributePairs(values: SearchAttributeValues): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [];
  for (const name of Object.keys(searchAttributes) as (keyof typeof searchAttributes)[]) {
    const value = values[name];
    if (value === undefined) continue;
    pairs.push({ key: searchAttributes[name], value } as SearchAttributePair);
  }
  return pairs;
}

/** `Name=Type` pairs in the form the dev server's `--search-attribute` flag takes. */
export function searchAttributeRegistrations(): { name: string; type: 'Keyword' | 'KeywordList' }[] {
  return Object.values(searchAttributes).map((key) => ({
    name: key.name,
    type: key.type === SearchAttributeType.KEYWORD_LIST ? 'KeywordList' : 'Keyword',
  }));
}
