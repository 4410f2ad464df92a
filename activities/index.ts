import type { Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import type { RegoEngine } from '../domain/planValidation';
import { Egress, type EgressPolicy } from './egress';
import { createHoldActivities } from './hold';
import { createLeaseActivities } from './lease';
import { createReleaseActivities } from './release';
import { createRolloutActivities } from './rollout';
import { createRunbookRunActivities } from './runbookRun';
import { createWebhookActivities } from './webhook';

export interface ActivityDeps {
  orm: Database;
  secrets: SecretBox;
  egress: EgressPolicy;
  /** Evaluates `planValidationOpa` rules on releases' plans (cli/opa.ts). */
  rego: RegoEngine;
}

/** Every activity the worker registers, built from the dependencies they share. */
export function createActivities(deps: ActivityDeps) {
  // Every outbound request of the activities goes through this, under the configured policy.
  const egress = new Egress(deps.egress);
  return {
    ...createRolloutActivities(deps),
    ...createReleaseActivities({ ...deps, egress }),
    ...createLeaseActivities(deps),
    ...createRunbookRunActivities(deps),
    ...createHoldActivities(deps),
    ...createWebhookActivities({ ...deps, egress }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
