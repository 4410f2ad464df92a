import { ApiKeySchema } from './apiKey';
import { ApprovalSchema } from './approval';
import { AuditEventSchema } from './auditEvent';
import { DeploymentSchema } from './deployment';
import { DeploymentVersionSchema } from './deploymentVersion';
import { EnvironmentSchema } from './environment';
import { HoldSchema } from './hold';
import { JobSchema, JobVerificationSchema } from './job';
import { JobAgentSchema } from './jobAgent';
import { PolicySchema } from './policy';
import { PolicySkipSchema } from './policySkip';
import { RelationshipRuleSchema } from './relationshipRule';
import { ReleaseSchema } from './release';
import { ReleaseTargetSchema } from './releaseTarget';
import { ReleaseTargetStateSchema } from './releaseTargetState';
import { ResourceSchema, ResourceVariableSchema } from './resource';
import { ResourceProviderSchema } from './resourceProvider';
import { RunbookRunSchema, RunbookSchema } from './runbook';
import { SystemDeploymentSchema, SystemEnvironmentSchema, SystemSchema } from './system';
import { DeploymentVariableSchema, DeploymentVariableValueSchema } from './variable';
import { VariableSetSchema, VariableSetVariableSchema } from './variableSet';
import { WebhookDeliverySchema, WebhookSchema } from './webhook';
import { WorkspaceSchema } from './workspace';

export const entities = [
  WorkspaceSchema,
  ApiKeySchema,
  DeploymentSchema,
  DeploymentVersionSchema,
  SystemSchema,
  SystemDeploymentSchema,
  SystemEnvironmentSchema,
  EnvironmentSchema,
  ResourceSchema,
  ResourceVariableSchema,
  ResourceProviderSchema,
  JobAgentSchema,
  DeploymentVariableSchema,
  DeploymentVariableValueSchema,
  PolicySchema,
  PolicySkipSchema,
  HoldSchema,
  VariableSetSchema,
  VariableSetVariableSchema,
  RelationshipRuleSchema,
  ReleaseTargetSchema,
  ReleaseSchema,
  JobSchema,
  JobVerificationSchema,
  ReleaseTargetStateSchema,
  ApprovalSchema,
  RunbookSchema,
  RunbookRunSchema,
  AuditEventSchema,
  WebhookSchema,
  WebhookDeliverySchema,
];

export * from './apiKey';
export * from './approval';
export * from './auditEvent';
export * from './deployment';
export * from './deploymentVersion';
export * from './environment';
export * from './hold';
export * from './job';
export * from './jobAgent';
export * from './policy';
export * from './policySkip';
export * from './relationshipRule';
export * from './release';
export * from './releaseTarget';
export * from './releaseTargetState';
export * from './resource';
export * from './resourceProvider';
export * from './runbook';
export * from './system';
export * from './variable';
export * from './variableSet';
export * from './webhook';
export * from './workspace';
