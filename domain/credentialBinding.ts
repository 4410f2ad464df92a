import { ConflictError } from './errors';
import { AGENT_ENDPOINTS } from './jobAgents';
import type { JobAgentType } from './jobAgentTypes';
import { RULE_DEFAULTS } from './ruleDefaults';

/**
 * A stored credential stays bound to the destination it was stored for (docs/security.md
 * "Credential binding"): a job agent's to the agent's type and endpoint, a metric provider's to the
 * provider's type and every address it sends requests to. Writing `{"sensitive": true}` back keeps a stored
 * credential only while that destination stays the same; whoever changes the destination sends the
 * credential itself, so a key that may edit a record but cannot read its secrets cannot point them
 * at a host of its choosing.
 */

/**
 * Where each metric provider type sends requests: the paths of the keys that name them, and what
 * a key left out means (rules are stored as written: a site written out and one left to its
 * default are the same destination).
 */
const PROVIDER_ENDPOINTS: Record<string, readonly { path: readonly string[]; default?: string }[]> = {
  http: [{ path: ['url'] }],
  prometheus: [{ path: ['address'] }, { path: ['authentication', 'oauth2', 'tokenUrl'] }],
  datadog: [{ path: ['site'], default: RULE_DEFAULTS.datadogSite }],
  terraformCloudRun: [{ path: ['address'] }],
};

/** An endpoint as compared: a URL in its normal form (host lower-cased, no trailing slash), else as is. */
function endpoint(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return JSON.stringify(value);
  try {
    return new URL(value).href.replace(/\/+$/, '');
  } catch {
    return value.toLowerCase();
  }
}

const read = (node: unknown, path: readonly string[]): unknown =>
  path.reduce<unknown>(
    (value, key) =>
      value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined,
    node,
  );

/** Where a job agent's credentials go: its type and its endpoint (the type's default when it names none). */
export function agentDestination(type: JobAgentType, config: Record<string, unknown>): string {
  const service = AGENT_ENDPOINTS[type];
  if (!service) return JSON.stringify([type, null]);
  const written = config[service.key] ?? service.default;
  const resolved = typeof written === 'string' && service.resolve ? service.resolve(written) : written;
  return JSON.stringify([type, endpoint(resolved)]);
}

/** Where a metric provider's credentials go: its type and each address it sends requests to. */
export function metricProviderDestination(provider: Record<string, unknown>): string {
  const type = String(provider.type);
  return JSON.stringify([
    type,
    ...(PROVIDER_ENDPOINTS[type] ?? []).map((key) => endpoint(read(provider, key.path) ?? key.default)),
  ]);
}

/**
 * Refuses a write that keeps stored credentials (`kept`: the request paths of the
 * `{"sensitive": true}` markers that keep one) while their destination changes from `before` to
 * `after` (409 `credential_destination_changed`).
 */
export function refuseMovedCredentials(
  kept: readonly string[],
  before: string | undefined,
  after: string,
): void {
  if (kept.length === 0 || before === undefined || before === after) return;
  throw new ConflictError(
    'A stored credential stays with the type and endpoint it was stored for: resend the credential to change its destination',
    'credential_destination_changed',
    kept.map((path) => ({
      path,
      message: 'keeps a stored credential while its type or endpoint changes; send the credential itself',
    })),
  );
}
