import { z } from 'zod';
import { celExpression } from './celSchema';
import { displayText } from './displayText';
import type { HeldSelector } from './selectors';
import { JOB_STATUSES } from './jobStatus';
import { RULE_DEFAULTS } from './ruleDefaults';
import { MAX_RULE_COUNT, MAX_RULE_SECONDS } from './ruleLimits';
import { windowProblems } from './windows';
import { MAX_REGO_LENGTH, regoPackage } from './planValidation';
import { RULE_KIND_NAMES, ruleKind, type RuleKind } from './ruleKinds';

/**
 * Policy rules (Ctrlplane's rule kinds). Each rule object carries exactly one kind. This module
 * validates them; enforcement lives with the release workflow.
 */

const jobStatus = z.enum(JOB_STATUSES);
const jobStatuses = z.array(jobStatus).max(JOB_STATUSES.length);

export const AnyApprovalRule = z.strictObject({
  minApprovals: z.number().int().min(1).max(100),
  /**
   * The key that created the version may not approve it: its approval is refused (403) and would not
   * count (docs/behaviour.md "Approvals").
   */
  requireDistinctApprover: z.boolean().optional(),
});

export const EnvironmentProgressionRule = z.strictObject({
  dependsOnEnvironmentSelector: celExpression('environment'),
  /** Unset means every target (100). */
  minimumSuccessPercentage: z.number().min(0).max(100).optional(),
  minimumSoakTimeMinutes: z
    .number()
    .min(0)
    .max(MAX_RULE_SECONDS / 60)
    .optional(),
  successStatuses: jobStatuses.min(1).optional(),
  maximumAgeHours: z
    .number()
    .int()
    .min(0)
    .max(MAX_RULE_SECONDS / 3600)
    .optional(),
});

export const DeploymentWindowRule = z
  .strictObject({
    rrule: z.string().min(1).max(1000),
    durationMinutes: z
      .number()
      .int()
      .min(1)
      .max(MAX_RULE_SECONDS / 60),
    timezone: z.string().max(100).optional(),
    allowWindow: z.boolean().optional(),
  })
  .superRefine((rule, ctx) => {
    for (const { path, message } of windowProblems(
      rule.rrule,
      rule.timezone ?? RULE_DEFAULTS.timezone,
      {
        rrule: 'rrule',
        timeZone: 'timezone',
      },
      new Date(),
    ))
      ctx.addIssue({ code: 'custom', path: [path], message });
  });

export const VersionSelectorRule = z.strictObject({
  selector: celExpression('versionRule'),
  description: displayText(z.string().max(1000), 'multi').optional(),
});

const seconds = z.number().int().min(0).max(MAX_RULE_SECONDS);

export const VersionCooldownRule = z.strictObject({ intervalSeconds: seconds });

export const RetryRule = z.strictObject({
  maxRetries: z.number().int().min(0).max(100),
  backoffSeconds: seconds.optional(),
  backoffStrategy: z.enum(['linear', 'exponential']).optional(),
  maxBackoffSeconds: seconds.optional(),
  retryOnStatuses: jobStatuses.optional(),
});

/**
 * Ctrlplane's rollback rule: when a target's newest release fails with its last job in one of these
 * statuses (or, with `onVerificationFailure`, its verification failed), the target's previous
 * successful release runs again (docs/behaviour.md "Rollback").
 */
export const RollbackRule = z.strictObject({
  onJobStatuses: jobStatuses.min(1).optional(),
  onVerificationFailure: z.boolean().optional(),
});

export const GradualRolloutRule = z.strictObject({
  rolloutType: z.enum(['linear', 'linear-normalized']),
  timeScaleInterval: seconds,
});

/** Waves one rollout may have: each is a statement of the rollout's advance, and a column of the board. */
export const MAX_ROLLOUT_WAVES = 20;

/**
 * One wave of a rollout (docs/behaviour.md "Rolling out to a fleet"): the targets its `selector`
 * matches first, at most `maxParallel` (or `maxPercent` of the wave) with an active job at once,
 * and a bake time after its last job ended before the next wave starts. With `manualJudgement`, the
 * wave starts only once a person said continue (the rollout halts if none did within the timeout).
 */
export const RolloutWave = z.strictObject({
  name: displayText(z.string().min(1).max(100), 'single'),
  selector: celExpression('target'),
  maxParallel: z.number().int().min(1).max(1_000_000).optional(),
  maxPercent: z.number().gt(0).max(100).optional(),
  bakeSeconds: seconds.optional(),
  manualJudgement: z
    .strictObject({
      approvers: z
        .array(z.string().min(1).max(200))
        .min(1)
        .max(50)
        .optional()
        .describe('The API keys (names or ids) whose judgement counts; any operator key when absent'),
      timeoutSeconds: seconds.min(1).optional(),
    })
    .optional(),
});

/** When a rollout stops by itself: a share of the targets that ran failed, or so many failed in a row. */
export const RolloutHaltOn = z
  .strictObject({
    failurePercent: z.number().gt(0).max(100).optional(),
    consecutiveFailures: z.number().int().min(1).max(MAX_RULE_COUNT).optional(),
  })
  .refine((halt) => halt.failurePercent !== undefined || halt.consecutiveFailures !== undefined, {
    message: 'names failurePercent, consecutiveFailures or both',
  });

/**
 * A rollout in waves: a target belongs to the first wave whose selector matches it, the targets no
 * wave matches go last, and a wave starts once every earlier one has ended and baked.
 */
export const WavesRule = z
  .strictObject({
    waves: z.array(RolloutWave).min(1).max(MAX_ROLLOUT_WAVES),
    haltOn: RolloutHaltOn.optional(),
    onHalt: z.enum(['pause', 'rollback']).optional(),
  })
  .refine((rule) => new Set(rule.waves.map((wave) => wave.name)).size === rule.waves.length, {
    message: 'wave names are unique within the rule',
  });

const DURATION = /^(\d{1,6})(ms|s|m|h)$/;
const DURATION_SECONDS = { ms: 0.001, s: 1, m: 60, h: 3600 } as const;

/**
 * Ctrlplane's `timeout` (a duration such as "30s") as our `timeoutSeconds`, rounded up; a provider
 * that gives both keeps both, and the strict schema refuses the pair.
 */
function timeoutAsSeconds(provider: unknown): unknown {
  if (typeof provider !== 'object' || provider === null || !('timeout' in provider)) return provider;
  const { timeout, ...rest } = provider as { timeout: unknown };
  const match = typeof timeout === 'string' ? DURATION.exec(timeout) : null;
  if (!match || 'timeoutSeconds' in rest) return provider;
  const seconds = Number(match[1]) * DURATION_SECONDS[match[2] as keyof typeof DURATION_SECONDS];
  return { ...rest, timeoutSeconds: Math.ceil(seconds) };
}

const HttpMetricProvider = z.strictObject({
  type: z.literal('http'),
  url: z.url().max(2048),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']).optional(),
  /**
   * Often credentials: stored sealed, shown as `{"sensitive": true}`, which written back keeps the
   * stored value (db/sensitiveValues.ts); opened only for the request itself.
   */
  headers: z
    .record(
      z.string().max(200),
      z.union([z.string().max(8192), z.strictObject({ sensitive: z.literal(true) })]),
    )
    .refine((headers) => Object.keys(headers).length <= 50, 'at most 50 headers')
    .optional(),
  body: z.string().max(65_536).optional(),
  timeoutSeconds: z.number().int().min(1).max(300).optional(),
});

const SleepMetricProvider = z.strictObject({
  type: z.literal('sleep'),
  durationSeconds: z.number().int().min(1).max(3600),
});

/** A credential of a metric provider: stored sealed, shown as `{"sensitive": true}`, which keeps it when written back. */
const providerSecret = z.union([z.string().min(1).max(8192), z.strictObject({ sensitive: z.literal(true) })]);

/** A Prometheus duration, e.g. `30s`, `5m`, `1h`. */
const promDuration = z.string().regex(/^\d{1,6}(ms|s|m|h|d|w)$/, 'a duration such as 30s, 5m or 1h');

/** Prometheus' HTTP API: an instant query, or a range query over the last `start`. */
const PrometheusMetricProvider = z.strictObject({
  type: z.literal('prometheus'),
  address: z.url().max(2048),
  query: z.string().min(1).max(8192),
  rangeQuery: z
    .strictObject({ step: promDuration, start: promDuration.optional(), end: promDuration.optional() })
    .optional(),
  authentication: z
    .strictObject({
      bearerToken: providerSecret.optional(),
      oauth2: z
        .strictObject({
          tokenUrl: z.url().max(2048),
          clientId: z.string().min(1).max(1000),
          clientSecret: providerSecret,
          scopes: z.array(z.string().max(200)).max(20).optional(),
        })
        .optional(),
    })
    .optional(),
  headers: z
    .array(z.strictObject({ key: z.string().min(1).max(200), value: z.string().max(8192) }))
    .max(50)
    .optional(),
  insecure: z.literal(false).optional().describe('TLS is always verified: `insecure: true` is refused'),
  timeout: z.number().int().min(1).max(300).optional(),
});

/** Datadog's scalar query API (`/api/v2/query/scalar`) over the last five minutes. */
const DatadogMetricProvider = z.strictObject({
  type: z.literal('datadog'),
  site: z
    .string()
    .regex(/^[a-z0-9]+([.-][a-z0-9]+)*\.(com|eu)$/, 'a Datadog site such as datadoghq.com or datadoghq.eu')
    .optional(),
  apiKey: providerSecret,
  appKey: providerSecret,
  queries: z
    .record(z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/), z.string().min(1).max(8192))
    .refine(
      (queries) => Object.keys(queries).length >= 1 && Object.keys(queries).length <= 10,
      '1 to 10 queries',
    ),
  formula: z.string().min(1).max(8192).optional(),
  aggregator: z.enum(['avg', 'min', 'max', 'sum', 'last', 'percentile', 'mean', 'l2norm', 'area']).optional(),
  intervalSeconds: z.number().int().min(1).max(3600).optional(),
});

/** A Terraform Cloud / Enterprise run, read by id: `result.status` is the run's status. */
const TerraformCloudRunMetricProvider = z.strictObject({
  type: z.literal('terraformCloudRun'),
  address: z.url().max(2048),
  token: providerSecret,
  runId: z.string().regex(/^run-[A-Za-z0-9]{1,64}$/, 'a run id such as run-abc123'),
});

export const VerificationMetric = z.strictObject({
  name: displayText(z.string().min(1).max(200), 'single'),
  intervalSeconds: seconds.min(1),
  count: z.number().int().min(1).max(MAX_RULE_COUNT),
  provider: z.preprocess(
    timeoutAsSeconds,
    z.discriminatedUnion('type', [
      HttpMetricProvider,
      SleepMetricProvider,
      PrometheusMetricProvider,
      DatadogMetricProvider,
      TerraformCloudRunMetricProvider,
    ]),
  ),
  successCondition: celExpression('measurement'),
  failureCondition: celExpression('measurement').optional(),
  successThreshold: z.number().int().min(0).max(MAX_RULE_COUNT).optional(),
  failureThreshold: z.number().int().min(0).max(MAX_RULE_COUNT).optional(),
});

export const VerificationRule = z.strictObject({
  metrics: z.array(VerificationMetric).min(1).max(50),
  triggerOn: z.enum(['jobCreated', 'jobStarted', 'jobSuccess', 'jobFailure']).optional(),
});

/**
 * Ctrlplane's deployment dependency: the target's resource must run, from another deployment, a
 * version that `dependsOn` (CEL over that `deployment` and its current `version` there) matches.
 */
export const DeploymentDependencyRule = z.strictObject({ dependsOn: celExpression('dependency') });

/**
 * Ctrlplane's OPA plan validation (domain/planValidation.ts): a Rego v1 policy with a `deny` set,
 * evaluated on the release's plan; compiled when the policy is written.
 */
export const PlanValidationOpaRule = z.strictObject({
  name: displayText(z.string().min(1).max(200), 'single'),
  description: displayText(z.string().max(4000), 'multi').optional(),
  rego: z
    .string()
    .min(1)
    .max(MAX_REGO_LENGTH)
    .refine((source) => regoPackage(source) !== undefined, 'declares no package (e.g. `package main`)'),
});

export const RULE_KINDS = {
  anyApproval: AnyApprovalRule,
  environmentProgression: EnvironmentProgressionRule,
  deploymentWindow: DeploymentWindowRule,
  versionSelector: VersionSelectorRule,
  versionCooldown: VersionCooldownRule,
  retry: RetryRule,
  gradualRollout: GradualRolloutRule,
  verification: VerificationRule,
  deploymentDependency: DeploymentDependencyRule,
  planValidationOpa: PlanValidationOpaRule,
  rollback: RollbackRule,
  waves: WavesRule,
} as const satisfies Record<RuleKind, z.ZodType>;

export { ruleKind, type RuleKind };

/**
 * A rule as written: an optional id and exactly one kind. `policyId` and `createdAt`, which a rule read back shows,
 * are taken and ignored (Ctrlplane's upsert takes them too), so a policy read can be sent back as it is.
 */
export const PolicyRuleInput = z
  .strictObject({
    id: z.uuid().optional(),
    policyId: z.string().max(100).optional(),
    createdAt: z.string().max(100).optional(),
    ...Object.fromEntries(Object.entries(RULE_KINDS).map(([kind, schema]) => [kind, schema.optional()])),
  } as {
    id: z.ZodOptional<z.ZodUUID>;
    policyId: z.ZodOptional<z.ZodString>;
    createdAt: z.ZodOptional<z.ZodString>;
  } & { [K in RuleKind]: z.ZodOptional<(typeof RULE_KINDS)[K]> })
  .superRefine((rule, ctx) => {
    const kinds = RULE_KIND_NAMES.filter((kind) => rule[kind] !== undefined);
    if (kinds.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message:
          kinds.length === 0
            ? `a rule needs one of: ${RULE_KIND_NAMES.join(', ')}`
            : `a rule holds exactly one kind, this one has ${kinds.join(' and ')}`,
      });
    }
  });

export type PolicyRuleInput = z.output<typeof PolicyRuleInput>;
/** A rule as stored: its id, when it was first written (absent on rules written before that was kept), one kind. */
export type PolicyRule = Omit<PolicyRuleInput, 'policyId'> & { id: string };

/** The CEL selectors a policy holds, by the path of their field. */
export function policySelectors(policy: {
  selector: string;
  rules: readonly PolicyRuleInput[];
}): HeldSelector[] {
  return [
    { path: 'selector', scope: 'target', expression: policy.selector },
    ...policy.rules.flatMap((rule, index): HeldSelector[] => [
      ...(rule.versionSelector
        ? [
            {
              path: `rules[${index}].versionSelector.selector`,
              scope: 'versionRule' as const,
              expression: rule.versionSelector.selector,
            },
          ]
        : []),
      ...(rule.environmentProgression
        ? [
            {
              path: `rules[${index}].environmentProgression.dependsOnEnvironmentSelector`,
              scope: 'environment' as const,
              expression: rule.environmentProgression.dependsOnEnvironmentSelector,
            },
          ]
        : []),
      ...(rule.deploymentDependency
        ? [
            {
              path: `rules[${index}].deploymentDependency.dependsOn`,
              scope: 'dependency' as const,
              expression: rule.deploymentDependency.dependsOn,
            },
          ]
        : []),
      ...(rule.waves?.waves.map((wave, w) => ({
        path: `rules[${index}].waves.waves[${w}].selector`,
        scope: 'target' as const,
        expression: wave.selector,
      })) ?? []),
      ...(rule.verification?.metrics.flatMap((metric, m) => [
        {
          path: `rules[${index}].verification.metrics[${m}].successCondition`,
          scope: 'measurement' as const,
          expression: metric.successCondition,
        },
        {
          path: `rules[${index}].verification.metrics[${m}].failureCondition`,
          scope: 'measurement' as const,
          expression: metric.failureCondition,
        },
      ]) ?? []),
    ]),
  ];
}
