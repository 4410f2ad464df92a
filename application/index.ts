import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import type { RegoEngine } from '../domain/planValidation';
import type { SecretBox } from '../db/secrets';
import { SYSTEM_ORIGIN, type AuditOrigin } from '../db/audit';
import { ApiKeyStore } from './apiKeys';
import { AuditStore } from './audit';
import { BoardSessionStore } from './boardSessions';
import { WebhookStore } from './webhooks';
import { WorkspaceSecretStore } from './workspaceSecrets';
import { DeploymentPlanStore } from './deploymentPlans';
import { DeploymentStore } from './deployments';
import { EnvironmentStore } from './environments';
import { JobAgentStore } from './jobAgents';
import { JobStore } from './jobs';
import { PolicyStore } from './policies';
import { PullStore } from '../engine/jobMoves';
import { RelationshipRuleStore } from './relationshipRules';
import { ReleaseStore } from './releases';
import { ReleaseTargetStore } from './releaseTargets';
import { ResourceProviderStore } from './resourceProviders';
import { ResourceLookupStore } from './resourceLookups';
import { ResourceStore } from './resources';
import { PolicySkipStore } from './policySkips';
import { HoldStore } from './holds';
import type { SkipLifetimes } from '../domain/policySkips';
import { RolloutBoardStore } from './rolloutBoard';
import { DoraView } from './dora';
import { RunbookStore } from './runbooks';
import { SelectorOverrunStore } from './selectorOverruns';
import { SystemStore } from './systems';
import { TargetStateStore } from './targetStates';
import { VariableSetStore } from './variableSets';
import { VariableStore } from './variables';
import { VersionDependencyStore } from './versionDependencies';
import { VersionStore } from './versions';
import { WorkspaceStore } from './workspaces';
import { GithubWebhookStore } from './githubWebhooks';

/** What the HTTP layer may ask of persistence; one set per request, sharing one EntityManager. */
export interface Stores {
  workspaces: WorkspaceStore;
  apiKeys: ApiKeyStore;
  boardSessions: BoardSessionStore;
  systems: SystemStore;
  environments: EnvironmentStore;
  deployments: DeploymentStore;
  deploymentPlans: DeploymentPlanStore;
  versions: VersionStore;
  versionDependencies: VersionDependencyStore;
  resources: ResourceStore;
  resourceLookups: ResourceLookupStore;
  resourceProviders: ResourceProviderStore;
  jobAgents: JobAgentStore;
  variables: VariableStore;
  variableSets: VariableSetStore;
  policies: PolicyStore;
  policySkips: PolicySkipStore;
  holds: HoldStore;
  audit: AuditStore;
  webhooks: WebhookStore;
  workspaceSecrets: WorkspaceSecretStore;
  releaseTargets: ReleaseTargetStore;
  relationshipRules: RelationshipRuleStore;
  releases: ReleaseStore;
  jobs: JobStore;
  targetStates: TargetStateStore;
  pull: PullStore;
  githubWebhooks: GithubWebhookStore;
  runbooks: RunbookStore;
  rolloutBoard: RolloutBoardStore;
  dora: DoraView;
  selectorOverruns: SelectorOverrunStore;
}

export function createStores(
  orm: Database,
  secrets: SecretBox,
  rego: RegoEngine,
  skipLifetimes: SkipLifetimes,
  webhookDeliveriesPerMinute: number,
  origin: AuditOrigin = SYSTEM_ORIGIN,
): Stores {
  const em = orm.em.fork() as EntityManager;
  return {
    workspaces: new WorkspaceStore(em),
    apiKeys: new ApiKeyStore(em),
    boardSessions: new BoardSessionStore(em),
    systems: new SystemStore(em),
    environments: new EnvironmentStore(em),
    deployments: new DeploymentStore(em, secrets),
    deploymentPlans: new DeploymentPlanStore(em, secrets),
    versions: new VersionStore(em, secrets, origin),
    versionDependencies: new VersionDependencyStore(em),
    resources: new ResourceStore(em, secrets, origin),
    resourceLookups: new ResourceLookupStore(em),
    resourceProviders: new ResourceProviderStore(em),
    jobAgents: new JobAgentStore(em, secrets),
    variables: new VariableStore(em, secrets),
    variableSets: new VariableSetStore(em, secrets),
    policies: new PolicyStore(em, secrets, rego),
    policySkips: new PolicySkipStore(em, skipLifetimes, origin),
    holds: new HoldStore(em),
    audit: new AuditStore(em, origin),
    webhooks: new WebhookStore(em, secrets, webhookDeliveriesPerMinute),
    workspaceSecrets: new WorkspaceSecretStore(em, secrets),
    releaseTargets: new ReleaseTargetStore(em, secrets),
    relationshipRules: new RelationshipRuleStore(em),
    releases: new ReleaseStore(em, origin),
    jobs: new JobStore(em, origin),
    targetStates: new TargetStateStore(em),
    pull: new PullStore(em, secrets, origin),
    githubWebhooks: new GithubWebhookStore(em, secrets),
    runbooks: new RunbookStore(em, secrets, origin),
    rolloutBoard: new RolloutBoardStore(em),
    dora: new DoraView(em),
    selectorOverruns: new SelectorOverrunStore(em),
  };
}
