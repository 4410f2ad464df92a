import { z } from 'zod';
import { JOB_STATUSES } from './jobStatus';
import type { JobAgentType } from './jobAgentTypes';
import { SENSITIVE_CONFIG_KEYS } from './sensitive';

/**
 * `lease: true`'s lease (docs/design.md "Decisions": leases); `leaseSeconds` names any other (the claim reads
 * both, engine/jobMoves/claims.ts).
 */
export const LEASE_SHORTHAND_SECONDS = 60;

/*
 * What each job agent kind's configuration may hold. An agent's own configuration, its entry in a
 * deployment and a version's `jobAgentConfig` are merged at dispatch (version first), so each level
 * may hold any subset; what a dispatch needs is checked on the merged result.
 */

/** A secret, or the marker responses show in its place, which keeps the stored value on write. */
const secret = z.union([z.string().min(1), z.strictObject({ sensitive: z.literal(true) })]);
const positiveInt = z.coerce.number().int().positive();
/** Templates rendered at each dispatch: bounded like any other stored text. */
const template = z.string().min(1).max(65_536);

/** The services a `github-app` and a `tfe` agent use without a `base_url` or `address` of their own. */
export const GITHUB_API_URL = 'https://api.github.com';
export const TFE_ADDRESS = 'https://app.terraform.io';

/**
 * Leases a job of a pull agent may lose (its agent died holding it) before it is not handed out
 * again: a poison job that kills every agent that takes it stops after this many (docs/behaviour.md
 * "Pull job agents": the delivery cap). An agent's `maxDeliveries` overrides it.
 */
export const DEFAULT_MAX_DELIVERIES = 3;

/**
 * How long a claimed job's agent has to stop it once its cancel is asked, before it ends `cancelled`
 * anyway (docs/behaviour.md "Pull job agents": graceful cancel). An agent's `cancelGraceSeconds` overrides it.
 */
export const DEFAULT_CANCEL_GRACE_SECONDS = 60;

/**
 * Pull agents (docs/behaviour.md "Pull job agents"); a lease is opt-in (docs/design.md "Decisions": leases).
 */
export const HttpPullConfig = z.strictObject({
  leaseSeconds: z.number().int().min(5).max(3600).optional(),
  lease: z.boolean().optional().describe(`true: a ${LEASE_SHORTHAND_SECONDS}-second lease`),
  enforceClaimId: z.boolean().optional(),
  maxDeliveries: z
    .number()
    .int()
    .min(1)
    .max(100)
    .optional()
    .describe(
      `leases a job may lose before it ends failure instead of going back to the queue (default ${DEFAULT_MAX_DELIVERIES})`,
    ),
  cancelGraceSeconds: z
    .number()
    .int()
    .min(1)
    .max(3600)
    .optional()
    .describe(`seconds a cancelled claimed job may take to stop (default ${DEFAULT_CANCEL_GRACE_SECONDS})`),
});

/** GitHub workflow runner (docs/behaviour.md "Job agent entry", workflow runner), as a GitHub App or with a token. */
export const GithubAppConfig = z.strictObject({
  owner: z.string().min(1).optional(),
  repo: z.string().min(1).optional(),
  workflow_id: z.union([positiveInt, z.string().min(1)]).optional(),
  ref: z.string().min(1).default('main'),
  installation_id: positiveInt.optional(),
  app_id: positiveInt.optional(),
  private_key: secret.optional(),
  token: secret.optional(),
  webhook_secret: secret.optional(),
  base_url: z.url().optional().describe('GitHub API URL (GitHub Enterprise); default https://api.github.com'),
});

/** An http(s) URL, or a host name (with a port or path) that `https://` in front of makes one. */
const ARGO_CD_SCHEME = /^https?:\/\//i;

/**
 * The URL an Argo CD agent's `server_url` names: as written when it has a scheme, else over HTTPS (a
 * bare `argocd.example.com`, as Ctrlplane's agents take it). The record keeps what was written, so a
 * declarative client reads back what it sent.
 */
export function argoCdServerUrl(serverUrl: string): string {
  return ARGO_CD_SCHEME.test(serverUrl) ? serverUrl : `https://${serverUrl}`;
}

const argoCdServer = z
  .string()
  .min(1)
  .max(2_048)
  .refine((value) => {
    if (!ARGO_CD_SCHEME.test(value) && value.includes('://')) return false;
    try {
      const url = new URL(argoCdServerUrl(value));
      return url.hostname !== '' && url.username === '' && url.password === '';
    } catch {
      return false;
    }
  }, 'an http(s) URL, or a host name that is served over HTTPS (argocd.example.com)')
  .describe('Argo CD server: a URL, or a host name (then https://<host>)');

/** Argo CD (docs/behaviour.md "Job agent entry", GitOps sync). */
export const ArgoCdConfig = z.strictObject({
  template: template.optional(),
  server_url: argoCdServer.optional(),
  api_key: secret.optional(),
});

/** Terraform Cloud / Enterprise (docs/behaviour.md "Job agent entry", infrastructure workspace). */
export const TfeConfig = z.strictObject({
  organization: z.string().min(1).optional(),
  template: template.optional(),
  address: z.url().optional().describe('default https://app.terraform.io'),
  token: secret.optional(),
});

/** Completes each job with a chosen status after a delay: for tests and demos. */
export const TestRunnerConfig = z.strictObject({
  status: z.enum(JOB_STATUSES).default('successful'),
  delaySeconds: z.number().min(0).max(3600).default(0),
  message: z.string().max(2000).optional(),
});

export const JOB_AGENT_CONFIG_SCHEMAS = {
  'http-pull': HttpPullConfig,
  'github-app': GithubAppConfig,
  'argo-cd': ArgoCdConfig,
  tfe: TfeConfig,
  'test-runner': TestRunnerConfig,
} as const satisfies Record<JobAgentType, z.ZodType>;

/**
 * Where a push agent sends its requests and what it proves itself with: taken from the agent's own
 * record only. The other merge sources (a version's `jobAgentConfig`, a deployment entry, resolved
 * variables) are written by anyone who may deploy; if they could name the endpoint, the stored
 * credentials would go to a host of their choosing.
 */
export const AGENT_OWNED_KEYS: Record<JobAgentType, readonly string[]> = {
  'http-pull': [],
  'github-app': ['base_url', 'app_id', 'installation_id', 'private_key', 'token', 'webhook_secret'],
  'argo-cd': ['server_url', 'api_key'],
  tfe: ['address', 'token'],
  'test-runner': [],
};

/**
 * Where each push agent type sends its credentials: the configuration key naming its service, how
 * what is written there names a URL (when not as is), and the service used when the key is absent. A stored credential is bound to this endpoint and to
 * the agent's type (domain/credentialBinding.ts).
 */
export const AGENT_ENDPOINTS: Record<
  JobAgentType,
  { key: string; default?: string; resolve?: (written: string) => string } | null
> = {
  'http-pull': null,
  'github-app': { key: 'base_url', default: GITHUB_API_URL },
  'argo-cd': { key: 'server_url', resolve: argoCdServerUrl },
  tfe: { key: 'address', default: TFE_ADDRESS },
  'test-runner': null,
};

/** Ctrlplane's camelCase spellings of configuration keys, accepted on write and stored as ours. */
const CONFIG_KEY_ALIASES: Record<JobAgentType, Readonly<Record<string, string>>> = {
  'http-pull': {},
  'github-app': {
    installationId: 'installation_id',
    appId: 'app_id',
    privateKey: 'private_key',
    workflowId: 'workflow_id',
    baseUrl: 'base_url',
    webhookSecret: 'webhook_secret',
  },
  'argo-cd': { serverUrl: 'server_url', apiKey: 'api_key' },
  tfe: {},
  'test-runner': {},
};

/**
 * An agent configuration with Ctrlplane's spellings renamed to ours. A key given in both spellings
 * is left as sent, so the strict schema refuses the alias rather than one value silently winning.
 */
export function canonicalAgentConfig(type: JobAgentType, config: unknown): unknown {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) return config;
  const aliases = CONFIG_KEY_ALIASES[type];
  return Object.fromEntries(
    Object.entries(config).map(([key, value]) => {
      const canonical = aliases[key];
      return canonical && !(canonical in config) ? [canonical, value] : [key, value];
    }),
  );
}

/**
 * A job agent as CEL selectors see it (`jobAgent`). Its configuration comes without its secrets (a
 * selector must not be an oracle on a credential), and under Ctrlplane's spellings as well as ours,
 * so a selector written for Ctrlplane (`jobAgent.config.serverUrl`) reads what we store as `server_url`.
 * Kept here, not in domain/selectors.ts, so the CEL threads do not load the agents' schemas.
 */
export function agentSelectorContext(agent: {
  id: string;
  name: string;
  type: JobAgentType;
  metadata?: Record<string, string>;
  config: Readonly<Record<string, unknown>>;
}): Record<string, unknown> {
  const config = Object.fromEntries(
    Object.entries(agent.config).filter(([key]) => !SENSITIVE_CONFIG_KEYS.has(key)),
  );
  for (const [alias, canonical] of Object.entries(CONFIG_KEY_ALIASES[agent.type]))
    if (canonical in config && !(alias in config)) config[alias] = config[canonical];
  return { id: agent.id, name: agent.name, type: agent.type, metadata: agent.metadata ?? {}, config };
}
