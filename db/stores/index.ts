import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../database';
import type { SecretBox } from '../secrets';
import { ApiKeyStore } from './apiKeys';
import { DeploymentStore } from './deployments';
import { EnvironmentStore } from './environments';
import { JobAgentStore } from './jobAgents';
import { JobStore } from './jobs';
import { PolicyStore } from './policies';
import { PullStore } from './pull';
import { ReleaseStore } from './releases';
import { ReleaseTargetStore } from './releaseTargets';
import { ResourceProviderStore } from './resourceProviders';
import { ResourceStore } from './resources';
import { SystemStore } from './systems';
import { TargetStateStore } from './targetStates';
import { VariableStore } from './variables';
import { VersionStore } from './versions';
import { WorkspaceStore } from './workspaces';
import { GithubWebhookStore } from './githubWebhooks';

/** What the HTTP layer may ask of persistence; one set per request, sharing one EntityManager. */
export interface Stores {
  workspaces: WorkspaceStore;
  apiKeys: ApiKeyStore;
  systems: SystemStore;
  environments: EnvironmentStore;
  deployments: DeploymentStore;
  versions: VersionStore;
  resources: ResourceStore;
  resourceProviders: ResourceProviderStore;
  jobAgents: JobAgentStore;
  variables: VariableStore;
  policies: PolicyStore;
  releaseTargets: ReleaseTargetStore;
  releases: ReleaseStore;
  jobs: JobStore;
  targetStates: TargetStateStore;
  pull: PullStore;
  githubWebhooks: GithubWebhookStore;
}

export function createStores(orm: Database, secrets: SecretBox): Stores {
  const em = orm.em.fork() as EntityManager;
  return {
    workspaces: new WorkspaceStore(em),
    apiKeys: new ApiKeyStore(em),
    systems: new SystemStore(em),
    environments: new EnvironmentStore(em),
    deployments: new DeploymentStore(em, secrets),
    versions: new VersionStore(em, secrets),
    resources: new ResourceStore(em, secrets),
    resourceProviders: new ResourceProviderStore(em),
    jobAgents: new JobAgentStore(em, secrets),
    variables: new VariableStore(em, secrets),
    policies: new PolicyStore(em, secrets),
    releaseTargets: new ReleaseTargetStore(em),
    releases: new ReleaseStore(em),
    jobs: new JobStore(em),
    targetStates: new TargetStateStore(em),
    pull: new PullStore(em, secrets),
    githubWebhooks: new GithubWebhookStore(em, secrets),
  };
}
