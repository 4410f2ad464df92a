import { Migration0001Foundation } from './Migration0001Foundation';
import { Migration0002Records } from './Migration0002Records';
import { Migration0003Releases } from './Migration0003Releases';
import { Migration0004PullAgents } from './Migration0004PullAgents';
import { Migration0005TraceContext } from './Migration0005TraceContext';
import { Migration0006CoalescedRollouts } from './Migration0006CoalescedRollouts';
import { Migration0007ApiKeyLastUsed } from './Migration0007ApiKeyLastUsed';
import { Migration0008RedeployOverrides } from './Migration0008RedeployOverrides';
import { Migration0009ResourceProviders } from './Migration0009ResourceProviders';
import { Migration0010VariableSets } from './Migration0010VariableSets';
import { Migration0011VersionDependencies } from './Migration0011VersionDependencies';
import { Migration0013RelationshipRules } from './Migration0013RelationshipRules';
import { Migration0014DeploymentPlans } from './Migration0014DeploymentPlans';
import { Migration0015DeploymentAgentSelector } from './Migration0015DeploymentAgentSelector';
import { Migration0016Workflows } from './Migration0016Workflows';
import { Migration0017RolloutStartedAt } from './Migration0017RolloutStartedAt';
import { Migration0018SelectorOverruns } from './Migration0018SelectorOverruns';
import { Migration0020PlanVerdicts } from './Migration0020PlanVerdicts';
import { Migration0021LegacySealsRetired } from './Migration0021LegacySealsRetired';
import { Migration0023OutboxLeaseLane } from './Migration0023OutboxLeaseLane';
import { Migration0024FairStarts } from './Migration0024FairStarts';
import { Migration0025NewestRelease } from './Migration0025NewestRelease';

/** Every migration, in order. Listed explicitly so compiled and bundled builds find them. */
export const migrations = [
  { name: 'Migration0001Foundation', class: Migration0001Foundation },
  { name: 'Migration0002Records', class: Migration0002Records },
  { name: 'Migration0003Releases', class: Migration0003Releases },
  { name: 'Migration0004PullAgents', class: Migration0004PullAgents },
  { name: 'Migration0005TraceContext', class: Migration0005TraceContext },
  { name: 'Migration0006CoalescedRollouts', class: Migration0006CoalescedRollouts },
  { name: 'Migration0007ApiKeyLastUsed', class: Migration0007ApiKeyLastUsed },
  { name: 'Migration0008RedeployOverrides', class: Migration0008RedeployOverrides },
  { name: 'Migration0009ResourceProviders', class: Migration0009ResourceProviders },
  { name: 'Migration0010VariableSets', class: Migration0010VariableSets },
  { name: 'Migration0011VersionDependencies', class: Migration0011VersionDependencies },
  { name: 'Migration0013RelationshipRules', class: Migration0013RelationshipRules },
  { name: 'Migration0014DeploymentPlans', class: Migration0014DeploymentPlans },
  { name: 'Migration0015DeploymentAgentSelector', class: Migration0015DeploymentAgentSelector },
  { name: 'Migration0016Workflows', class: Migration0016Workflows },
  { name: 'Migration0017RolloutStartedAt', class: Migration0017RolloutStartedAt },
  { name: 'Migration0018SelectorOverruns', class: Migration0018SelectorOverruns },
  { name: 'Migration0020PlanVerdicts', class: Migration0020PlanVerdicts },
  { name: 'Migration0021LegacySealsRetired', class: Migration0021LegacySealsRetired },
  { name: 'Migration0023OutboxLeaseLane', class: Migration0023OutboxLeaseLane },
  { name: 'Migration0024FairStarts', class: Migration0024FairStarts },
  { name: 'Migration0025NewestRelease', class: Migration0025NewestRelease },
];
