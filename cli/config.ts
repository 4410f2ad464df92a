import path from 'node:path';
import { egressEntryProblem, type EgressPolicy } from '../activities/egress';
import { z } from 'zod';
import type { TransportPolicy } from '../api/middleware/transport';
import { SecretBox } from '../db/secrets';
import { DEFAULT_WORKER_HEAP_MB, DEFAULT_WORKFLOW_CACHE_MB } from '../worker/tuning';
import { DEFAULT_TEMPORAL_MEMORY_LIMIT_MB } from './embedded/temporalMemory';
import { DEFAULT_SKIP_LIFETIMES, type SkipLifetimes } from '../domain/policySkips';
import { DEFAULT_AUDIT_RETENTION_DAYS } from '../domain/audit';
import { DEFAULT_WEBHOOK_DELIVERIES_PER_MINUTE } from '../db/webhookAdmissions';

/**
 * Every setting comes from the environment and is validated once, at start, so a typo fails
 * loudly with the variable's name instead of surfacing later as a strange runtime error.
 * docs/configuration.md lists the same variables; keep the two in step.
 */
const port = z.coerce.number().int().min(1).max(65535);
const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

/** `a, b,c` → ['a', 'b', 'c']; unset or blank → []. */
const commaList = () =>
  z
    .string()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean),
    );

/** CIDRs, addresses and host patterns of the worker's egress policies (activities/egress.ts). */
const egressList = () =>
  commaList().superRefine((entries, ctx) => {
    for (const entry of entries) {
      const problem = egressEntryProblem(entry);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }
  });

/** Where the metrics listener listens unless told otherwise (127.0.0.1 only, by default). */
const DEFAULT_METRICS_PORT = 9464;

/** OTLP over HTTP: `host:4318` would parse as a URL with the scheme `host:`, so the scheme is checked. */
const otlpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

const envSchema = z.object({
  FLIGHTDECK_HOST: z.string().default('127.0.0.1'),
  FLIGHTDECK_PORT: port.default(8080),
  FLIGHTDECK_PUBLIC_URL: optionalString.pipe(z.url().optional()),
  FLIGHTDECK_DATA_DIR: z.string().default('.flightdeck'),
  FLIGHTDECK_BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'must look like 512kb or 1mb')
    .default('1mb'),
  FLIGHTDECK_ADMIN_TOKEN: optionalString.pipe(
    z.string().min(16, 'must be at least 16 characters').optional(),
  ),
  FLIGHTDECK_METRICS_TOKEN: optionalString.pipe(
    z.string().min(16, 'must be at least 16 characters').optional(),
  ),
  FLIGHTDECK_METRICS_HOST: z.string().trim().min(1).default('127.0.0.1'),
  // Unset: the API's listener takes the default port, a worker runs none.
  FLIGHTDECK_METRICS_PORT: optionalString.pipe(
    z
      .union([z.literal('off'), z.coerce.number<string>().int().min(1).max(65535)], {
        error: 'must be a port (1-65535) or off',
      })
      .optional(),
  ),
  FLIGHTDECK_WORKER_METRICS_URL: optionalString.pipe(
    z.url({ protocol: /^http$/, error: 'must be an http:// URL' }).optional(),
  ),
  FLIGHTDECK_METRICS_TENANT_LABELS: z.stringbool().default(false),
  FLIGHTDECK_SECRET_KEY: optionalString.pipe(
    z.string().refine(isSecretKey, 'must be 32 bytes as base64 (openssl rand -base64 32) or hex').optional(),
  ),
  FLIGHTDECK_TLS_CERT: optionalString,
  FLIGHTDECK_TLS_KEY: optionalString,
  FLIGHTDECK_TRUSTED_PROXIES: commaList(),
  FLIGHTDECK_INSECURE_PULL: z.stringbool().default(false),
  FLIGHTDECK_EGRESS_ALLOW: egressList(),
  FLIGHTDECK_EGRESS_DENY: egressList(),
  // Webhooks' own allow-list: FLIGHTDECK_EGRESS_ALLOW never applies to them.
  FLIGHTDECK_WEBHOOK_EGRESS_ALLOW: egressList(),
  FLIGHTDECK_WEBHOOK_DELIVERIES_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(DEFAULT_WEBHOOK_DELIVERIES_PER_MINUTE),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
      .optional(),
  ),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  FLIGHTDECK_EMBEDDED_PG_PORT: port.default(54329),
  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('flightdeck'),
  TEMPORAL_UI_URL: optionalString.pipe(z.url().optional()),
  TEMPORAL_CLI_PATH: optionalString,
  FLIGHTDECK_WORKER_CACHE_MB: z.coerce.number().int().min(16).max(65_536).default(DEFAULT_WORKFLOW_CACHE_MB),
  FLIGHTDECK_WORKER_HEAP_MB: z.coerce.number().int().min(256).max(65_536).default(DEFAULT_WORKER_HEAP_MB),
  // A policy skip's life when it names no expiry, and the longest it may ask for (seconds).
  FLIGHTDECK_POLICY_SKIP_DEFAULT_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(366 * 86_400)
    .default(DEFAULT_SKIP_LIFETIMES.defaultSeconds),
  FLIGHTDECK_POLICY_SKIP_MAX_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(366 * 86_400)
    .default(DEFAULT_SKIP_LIFETIMES.maxSeconds),
  // Days the audit trail and the webhook delivery log are kept.
  FLIGHTDECK_AUDIT_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3650)
    .default(DEFAULT_AUDIT_RETENTION_DAYS),
  FLIGHTDECK_EMBEDDED_TEMPORAL_PORT: port.default(7233),
  FLIGHTDECK_EMBEDDED_TEMPORAL_UI_PORT: port.default(8233),
  FLIGHTDECK_EMBEDDED_TEMPORAL_MEMORY_MB: z.coerce
    .number()
    .int()
    .min(128)
    .max(65_536)
    .default(DEFAULT_TEMPORAL_MEMORY_LIMIT_MB),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString.pipe(otlpUrl.optional()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalString.pipe(otlpUrl.optional()),
  OTEL_SERVICE_NAME: optionalString,
});

function isSecretKey(value: string): boolean {
  try {
    SecretBox.fromString(value);
    return true;
  } catch {
    return false;
  }
}

export type EnvConfig = z.output<typeof envSchema>;

export interface Config {
  api: {
    host: string;
    port: number;
    publicUrl?: string;
    bodyLimit: string;
    adminToken?: string;
    /**
     * /metrics: on a listener of its own (`listener`; none when FLIGHTDECK_METRICS_PORT is off), and
     * on the API's port only behind a token (`token`, or the admin token); with `token`, the
     * listener asks for it too. Labels that tell workspaces apart only with `tenantLabels`.
     */
    metrics: {
      token?: string;
      listener?: { host: string; port: number };
      tenantLabels: boolean;
      /** A worker's metrics listener whose figures join this API's /metrics (`flightdeck start`). */
      workerUrl?: string;
    };
    /** Certificate and key files: when both are set, the API speaks HTTPS. */
    tls?: { certFile: string; keyFile: string };
    transport: TransportPolicy;
    /** A policy skip's default and longest life. */
    policySkips: SkipLifetimes;
  };
  logLevel: EnvConfig['LOG_LEVEL'];
  /** Encrypts sensitive values at rest; `flightdeck start` keeps one in the data directory when unset. */
  secretKey?: string;
  dataDir: string;
  database: { url?: string; poolMax: number; embeddedPort: number };
  temporal: {
    address?: string;
    namespace: string;
    taskQueue: string;
    uiUrl?: string;
    cliPath?: string;
    /** Memory a worker's workflow cache may take; workflows beyond it are replayed when they wake. */
    workflowCacheMb: number;
    embeddedPort: number;
    embeddedUiPort: number;
    /** The embedded dev server's Go memory limit (cli/embedded/temporalMemory.ts). */
    embeddedMemoryMb: number;
  };
  /** Where the worker may send requests on a caller's behalf (activities/egress.ts). */
  egress: EgressPolicy;
  webhooks: {
    /** Where webhook deliveries may go: their own allow-list, the deny-list of `egress`. */
    egress: EgressPolicy;
    /** Deliveries (and redeliveries) a workspace may start per minute (db/webhookAdmissions.ts). */
    deliveriesPerMinute: number;
  };
  /** Days the audit trail and the webhook delivery log are kept. */
  auditRetentionDays: number;
  worker: {
    /** The V8 heap `flightdeck start` gives its worker process (worker/tuning.ts). */
    heapMb: number;
    /**
     * The worker's metrics listener (plain HTTP, the metrics token if set): only when
     * FLIGHTDECK_METRICS_PORT is set to a port for the worker.
     */
    metricsListener?: { host: string; port: number };
  };
  /** OpenTelemetry tracing: on when an OTLP endpoint is configured. */
  tracing: {
    /** Where spans are sent over OTLP/HTTP; unset: tracing is off. */
    tracesUrl?: string;
    /** `OTEL_SERVICE_NAME`; unset: named after the process's role. */
    serviceName?: string;
  };
}

export class ConfigError extends Error {}

/**
 * The OTLP traces URL, as the OpenTelemetry specification derives it: the traces endpoint as
 * given, else `v1/traces` under the general endpoint.
 */
function otlpTracesUrl(e: EnvConfig): string | undefined {
  if (e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = e.OTEL_EXPORTER_OTLP_ENDPOINT;
  return base && `${base.replace(/\/+$/, '')}/v1/traces`;
}

const onlyOneTlsFile = (e: { FLIGHTDECK_TLS_CERT?: string; FLIGHTDECK_TLS_KEY?: string }) =>
  Boolean(e.FLIGHTDECK_TLS_CERT) !== Boolean(e.FLIGHTDECK_TLS_KEY);

/** The API's section of the configuration, from the parsed environment. */
function apiConfig(e: z.infer<typeof envSchema>): Config['api'] {
  const metricsPort = e.FLIGHTDECK_METRICS_PORT;
  return {
    host: e.FLIGHTDECK_HOST,
    port: e.FLIGHTDECK_PORT,
    publicUrl: e.FLIGHTDECK_PUBLIC_URL,
    bodyLimit: e.FLIGHTDECK_BODY_LIMIT,
    adminToken: e.FLIGHTDECK_ADMIN_TOKEN,
    metrics: {
      token: e.FLIGHTDECK_METRICS_TOKEN,
      listener:
        metricsPort === 'off'
          ? undefined
          : { host: e.FLIGHTDECK_METRICS_HOST, port: metricsPort ?? DEFAULT_METRICS_PORT },
      tenantLabels: e.FLIGHTDECK_METRICS_TENANT_LABELS,
      workerUrl: e.FLIGHTDECK_WORKER_METRICS_URL,
    },
    tls:
      e.FLIGHTDECK_TLS_CERT && e.FLIGHTDECK_TLS_KEY
        ? { certFile: e.FLIGHTDECK_TLS_CERT, keyFile: e.FLIGHTDECK_TLS_KEY }
        : undefined,
    transport: {
      trustedProxies: e.FLIGHTDECK_TRUSTED_PROXIES,
      allowInsecurePull: e.FLIGHTDECK_INSECURE_PULL,
    },
    policySkips: {
      defaultSeconds: e.FLIGHTDECK_POLICY_SKIP_DEFAULT_SECONDS,
      maxSeconds: e.FLIGHTDECK_POLICY_SKIP_MAX_SECONDS,
    },
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema
    .refine((e) => !onlyOneTlsFile(e), {
      message: 'set both FLIGHTDECK_TLS_CERT and FLIGHTDECK_TLS_KEY, or neither',
      path: ['FLIGHTDECK_TLS_CERT'],
    })
    .refine((e) => (e.FLIGHTDECK_METRICS_PORT ?? DEFAULT_METRICS_PORT) !== e.FLIGHTDECK_PORT, {
      message: 'must differ from FLIGHTDECK_PORT',
      path: ['FLIGHTDECK_METRICS_PORT'],
    })
    .refine((e) => e.FLIGHTDECK_POLICY_SKIP_DEFAULT_SECONDS <= e.FLIGHTDECK_POLICY_SKIP_MAX_SECONDS, {
      message: 'must not exceed FLIGHTDECK_POLICY_SKIP_MAX_SECONDS',
      path: ['FLIGHTDECK_POLICY_SKIP_DEFAULT_SECONDS'],
    })
    .safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}\nSee docs/configuration.md.`);
  }
  const e = parsed.data;
  const metricsPort = e.FLIGHTDECK_METRICS_PORT;
  return {
    api: apiConfig(e),
    logLevel: e.LOG_LEVEL,
    secretKey: e.FLIGHTDECK_SECRET_KEY,
    dataDir: path.resolve(e.FLIGHTDECK_DATA_DIR),
    database: {
      url: e.DATABASE_URL,
      poolMax: e.DATABASE_POOL_MAX,
      embeddedPort: e.FLIGHTDECK_EMBEDDED_PG_PORT,
    },
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      uiUrl: e.TEMPORAL_UI_URL,
      cliPath: e.TEMPORAL_CLI_PATH,
      workflowCacheMb: e.FLIGHTDECK_WORKER_CACHE_MB,
      embeddedPort: e.FLIGHTDECK_EMBEDDED_TEMPORAL_PORT,
      embeddedUiPort: e.FLIGHTDECK_EMBEDDED_TEMPORAL_UI_PORT,
      embeddedMemoryMb: e.FLIGHTDECK_EMBEDDED_TEMPORAL_MEMORY_MB,
    },
    egress: { allow: e.FLIGHTDECK_EGRESS_ALLOW, deny: e.FLIGHTDECK_EGRESS_DENY },
    webhooks: {
      egress: { allow: e.FLIGHTDECK_WEBHOOK_EGRESS_ALLOW, deny: e.FLIGHTDECK_EGRESS_DENY },
      deliveriesPerMinute: e.FLIGHTDECK_WEBHOOK_DELIVERIES_PER_MINUTE,
    },
    auditRetentionDays: e.FLIGHTDECK_AUDIT_RETENTION_DAYS,
    worker: {
      heapMb: e.FLIGHTDECK_WORKER_HEAP_MB,
      metricsListener:
        typeof metricsPort === 'number' ? { host: e.FLIGHTDECK_METRICS_HOST, port: metricsPort } : undefined,
    },
    tracing: { tracesUrl: otlpTracesUrl(e), serviceName: e.OTEL_SERVICE_NAME },
  };
}
