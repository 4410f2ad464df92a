import type { JobStatus } from './jobStatus';

/**
 * What an optional rule field means when a rule leaves it out. Rules are stored and answered as
 * written, so a declarative client (Terraform) reads back exactly what it sent; whatever reads a
 * rule applies these (docs/api.md "Records, selectors and release targets", policies). Kept apart from the
 * rules' schemas so that code reading a rule does not load zod (the API's schemas extend it first).
 */
export const RULE_DEFAULTS = {
  minimumSoakTimeMinutes: 0,
  successStatuses: ['successful'] as readonly JobStatus[],
  timezone: 'UTC',
  allowWindow: true,
  backoffStrategy: 'linear',
  httpMethod: 'GET',
  httpTimeoutSeconds: 30,
  datadogSite: 'datadoghq.com',
  datadogAggregator: 'last',
  /** No limit: a metric fails only when it cannot reach its successes. */
  failureThreshold: 0,
  triggerOn: 'jobSuccess',
} as const;
