import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import type { RegoEngine } from '../domain/planValidation';
import type { SecretBox } from '../db/secrets';
import type { AuditOrigin } from '../db/audit';
import { DEFAULT_WEBHOOK_DELIVERIES_PER_MINUTE } from '../db/webhookAdmissions';
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
import { PullStore } from './pull';
import { RelationshipRuleStore } from './relationshipRules';
import { ReleaseStore } from './releases';
import { ReleaseTargetStore } from './releaseTargets';
import { ResourceProviderStore } from './resourceProviders';
import { ResourceLookupStore } from './resourceLookups';
import { ResourceStore } from './resources';
import { PolicySkipStore } from './policySkips';
import { HoldStore } from './holds';
import { DEFAULT_SKIP_LIFETIMES, type SkipLifetimes } from '../domain/policySkips';
import { RolloutBoardStore } from './rolloutBoard';
import { RolloutStore } from './rollouts';
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

/**
 * The public methods of a store's class, without its private state: the class stays the one source
 * of their signatures, and a test can hand the API a fake of them (test/unit/api/fakeStores.ts).
 */
type Public<Store> = Pick<Store, keyof Store>;

/**
 * What the HTTP layer may ask of persistence: of each store, the methods the API calls. The API
 * depends on these alone; `storeFactory` builds the real ones.
 */
export interface Stores {
  workspaces: Omit<WorkspaceStore, 'oldest'>;
  apiKeys: Public<ApiKeyStore>;
  boardSessions: Public<BoardSessionStore>;
  systems: Public<SystemStore>;
  environments: Public<EnvironmentStore>;
  deployments: Public<DeploymentStore>;
  deploymentPlans: Public<DeploymentPlanStore>;
  versions: Public<VersionStore>;
  versionDependencies: Public<VersionDependencyStore>;
  resources: Public<ResourceStore>;
  resourceLookups: Public<ResourceLookupStore>;
  resourceProviders: Public<ResourceProviderStore>;
  jobAgents: Public<JobAgentStore>;
  variables: Public<VariableStore>;
  variableSets: Public<VariableSetStore>;
  policies: Public<PolicyStore>;
  policySkips: Public<PolicySkipStore>;
  holds: Public<HoldStore>;
  audit: Public<AuditStore>;
  webhooks: Public<WebhookStore>;
  workspaceSecrets: Public<WorkspaceSecretStore>;
  releaseTargets: Public<ReleaseTargetStore>;
  relationshipRules: Public<RelationshipRuleStore>;
  releases: Omit<ReleaseStore, 'get'>;
  jobs: Omit<JobStore, 'withReleases'>;
  targetStates: Public<TargetStateStore>;
  pull: Public<PullStore>;
  githubWebhooks: Public<GithubWebhookStore>;
  runbooks: Public<RunbookStore>;
  rolloutBoard: Public<RolloutBoardStore>;
  rollouts: Public<RolloutStore>;
  dora: Public<DoraView>;
  selectorOverruns: Public<SelectorOverrunStore>;
}

/** The stores of one request, acting as its origin (db/audit.ts): one set per request. */
export type StoreFactory = (origin: AuditOrigin) => Stores;

/** What the real stores need beside the database. */
export interface StoreSettings {
  secrets: SecretBox;
  /** Checks the Rego of `planValidationOpa` policy rules when they are written (cli/opa.ts). */
  rego: RegoEngine;
  /** A policy skip's default and longest life (domain/policySkips.ts defaults when absent). */
  skipLifetimes?: SkipLifetimes;
  /** Webhook deliveries a workspace may start per minute: redeliveries past it answer 429. */
  webhookDeliveriesPerMinute?: number;
}

/** The real stores over PostgreSQL: each set shares one EntityManager, forked for it. */
export function storeFactory(orm: Database, settings: StoreSettings): StoreFactory {
  const { secrets, rego } = settings;
  const skipLifetimes = settings.skipLifetimes ?? DEFAULT_SKIP_LIFETIMES;
  const deliveriesPerMinute = settings.webhookDeliveriesPerMinute ?? DEFAULT_WEBHOOK_DELIVERIES_PER_MINUTE;
  return (origin) => {
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
      webhooks: new WebhookStore(em, secrets, deliveriesPerMinute),
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
      rollouts: new RolloutStore(em, origin),
      dora: new DoraView(em),
      selectorOverruns: new SelectorOverrunStore(em),
    };
  };
}
