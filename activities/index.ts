import type { Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import type { RegoEngine } from '../domain/planValidation';
import { createApprovalActivities } from './approval';
import { Egress, type EgressPolicy } from './egress';
import { createHoldActivities } from './hold';
import { createLeaseActivities } from './lease';
import { createReleaseActivities } from './release';
import { createRolloutActivities } from './rollout';
import { createRolloutWavesActivities } from './rolloutWaves';
import { createRunbookRunActivities } from './runbookRun';
import { createWebhookActivities } from './webhook';

export interface ActivityDeps {
  orm: Database;
  secrets: SecretBox;
  /** Where requests for agents' services and verification probes may go. */
  egress: EgressPolicy;
  /** Where webhook deliveries may go: a policy of their own, never the one above. */
  webhookEgress: EgressPolicy;
  /** Evaluates `planValidationOpa` rules on releases' plans (cli/opa.ts). */
  rego: RegoEngine;
}

/** Every activity the worker registers, built from the dependencies they share. */
export function createActivities(deps: ActivityDeps) {
  // Every outbound request of the activities goes through one of these, under the configured policies.
  const egress = new Egress(deps.egress);
  const webhookEgress = new Egress(deps.webhookEgress);
  return {
    ...createRolloutActivities(deps),
    ...createReleaseActivities({ ...deps, egress }),
    ...createLeaseActivities(deps),
    ...createRunbookRunActivities(deps),
    ...createHoldActivities(deps),
    ...createRolloutWavesActivities(deps),
    ...createApprovalActivities(deps),
    ...createWebhookActivities({ ...deps, egress: webhookEgress }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
