import {
  answer,
  runWorkspaceCommand,
  stderr,
  stdout,
  type WorkspaceConnectionOptions,
} from './workspaceConnection';

/** `flightdeck skip …`: policy skips (docs/api.md "Policy skips"). */
export interface SkipCreateOptions extends WorkspaceConnectionOptions {
  rule: string;
  version: string;
  environment?: string;
  resource?: string;
  reason: string;
  expiresAt?: string;
}

export interface SkipListOptions extends WorkspaceConnectionOptions {
  version?: string;
  rule?: string;
  active?: 'true' | 'false';
}

interface SkipAnswer {
  id: string;
  ruleId: string;
  versionId: string;
  environmentId?: string;
  resourceId?: string;
  reason: string;
  expiresAt: string;
  active: boolean;
  createdBy: { name: string };
  detail?: string;
}

/** One skip as a line: its id, what it passes where, until when, who and why. */
export function describeSkip(skip: SkipAnswer): string {
  const scope = skip.resourceId
    ? `resource ${skip.resourceId}`
    : skip.environmentId
      ? `environment ${skip.environmentId}`
      : 'every target';
  const state = skip.active ? 'until' : 'expired';
  return `${skip.id}  rule ${skip.ruleId}  version ${skip.versionId}  ${scope}  ${state} ${skip.expiresAt}  by ${skip.createdBy.name}: ${skip.reason}`;
}

/** `flightdeck skip create`: exit 0 with the skip, 1 when refused. */
export function skipCreateCommand(options: SkipCreateOptions, out = stdout, err = stderr): Promise<number> {
  return runWorkspaceCommand('skip create', options, err, async (client, workspaceId) => {
    const response = await client.request<SkipAnswer>('POST', `v1/workspaces/${workspaceId}/policy-skips`, {
      ruleId: options.rule,
      versionId: options.version,
      ...(options.environment ? { environmentId: options.environment } : {}),
      ...(options.resource ? { resourceId: options.resource } : {}),
      reason: options.reason,
      ...(options.expiresAt ? { expiresAt: options.expiresAt } : {}),
    });
    return answer('skip create', response, out, err, (skip) => [describeSkip(skip)]);
  });
}

/** `flightdeck skip list`: the workspace's skips, newest first (up to 1,000). */
export function skipListCommand(options: SkipListOptions, out = stdout, err = stderr): Promise<number> {
  return runWorkspaceCommand('skip list', options, err, async (client, workspaceId) => {
    const query = new URLSearchParams({ limit: '1000' });
    if (options.version) query.set('versionId', options.version);
    if (options.rule) query.set('ruleId', options.rule);
    if (options.active) query.set('active', options.active);
    const response = await client.request<{ items: SkipAnswer[]; detail?: string }>(
      'GET',
      `v1/workspaces/${workspaceId}/policy-skips?${query.toString()}`,
    );
    return answer('skip list', response, out, err, (page) => page.items.map(describeSkip));
  });
}

/** `flightdeck skip delete <id>`: the rule counts again. */
export function skipDeleteCommand(
  id: string,
  options: WorkspaceConnectionOptions,
  out = stdout,
  err = stderr,
): Promise<number> {
  return runWorkspaceCommand('skip delete', options, err, async (client, workspaceId) => {
    const response = await client.request<SkipAnswer>(
      'DELETE',
      `v1/workspaces/${workspaceId}/policy-skips/${encodeURIComponent(id)}`,
    );
    return answer('skip delete', response, out, err, (skip) => [`deleted ${describeSkip(skip)}`]);
  });
}
