/**
 * Job agent kinds, apart from their configuration schemas (domain/jobAgents.ts): workflows need
 * only these, and every module a workflow imports is evaluated again for each cached workflow.
 */
export const JOB_AGENT_TYPES = ['http-pull', 'github-app', 'argo-cd', 'tfe', 'test-runner'] as const;
export type JobAgentType = (typeof JOB_AGENT_TYPES)[number];

/** Agents the service pushes work to and then follows (docs/behaviour.md "Push agents"). */
const PUSH_AGENT_TYPES: readonly JobAgentType[] = ['github-app', 'argo-cd', 'tfe'];

export function isPushAgent(type: JobAgentType | null): boolean {
  return type !== null && PUSH_AGENT_TYPES.includes(type);
}
