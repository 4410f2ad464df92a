import {
  answer,
  runWorkspaceCommand,
  stderr,
  stdout,
  type WorkspaceConnectionOptions,
} from './workspaceConnection';

/** `flightdeck hold …`: holds and freezes (docs/api.md "Holds and freezes"). */
export interface HoldCreateOptions extends WorkspaceConnectionOptions {
  selector: string;
  effect: 'block' | 'pin';
  version?: string;
  reason: string;
  expiresAt?: string;
  /** A freeze: the windows' RFC 5545 rule, each window's seconds and its time zone. */
  rrule?: string;
  durationSeconds?: string;
  timeZone?: string;
}

export interface HoldListOptions extends WorkspaceConnectionOptions {
  effect?: 'block' | 'pin';
  active?: 'true' | 'false';
}

interface HoldAnswer {
  id: string;
  selector: string;
  effect: 'block' | 'pin';
  versionId?: string;
  reason: string;
  expiresAt?: string;
  schedule?: { rrule: string; durationSeconds: number; timeZone: string };
  active: boolean;
  createdBy: { name: string };
  detail?: string;
}

/** One hold as a line: its id, what it does where, when, who and why. */
export function describeHold(hold: HoldAnswer): string {
  const effect = hold.effect === 'pin' ? `pin to ${hold.versionId}` : hold.schedule ? 'freeze' : 'block';
  const windows = hold.schedule
    ? `  windows ${hold.schedule.rrule.replace(/\n/g, ' ')} for ${hold.schedule.durationSeconds} s (${hold.schedule.timeZone})`
    : '';
  const until = !hold.active
    ? `expired ${hold.expiresAt}`
    : hold.expiresAt
      ? `until ${hold.expiresAt}`
      : 'until deleted';
  return `${hold.id}  ${effect}  ${hold.selector}${windows}  ${until}  by ${hold.createdBy.name}: ${hold.reason}`;
}

/** `flightdeck hold create`: exit 0 with the hold, 1 when refused. */
export function holdCreateCommand(options: HoldCreateOptions, out = stdout, err = stderr): Promise<number> {
  return runWorkspaceCommand('hold create', options, err, async (client, workspaceId) => {
    const response = await client.request<HoldAnswer>('POST', `v1/workspaces/${workspaceId}/holds`, {
      selector: options.selector,
      effect: options.effect,
      ...(options.version ? { versionId: options.version } : {}),
      reason: options.reason,
      ...(options.expiresAt ? { expiresAt: options.expiresAt } : {}),
      ...(options.rrule
        ? {
            schedule: {
              rrule: options.rrule,
              durationSeconds: Number(options.durationSeconds),
              ...(options.timeZone ? { timeZone: options.timeZone } : {}),
            },
          }
        : {}),
    });
    return answer('hold create', response, out, err, (hold) => [describeHold(hold)]);
  });
}

/** `flightdeck hold list`: the workspace's holds, newest first (up to 1,000). */
export function holdListCommand(options: HoldListOptions, out = stdout, err = stderr): Promise<number> {
  return runWorkspaceCommand('hold list', options, err, async (client, workspaceId) => {
    const query = new URLSearchParams({ limit: '1000' });
    if (options.effect) query.set('effect', options.effect);
    if (options.active) query.set('active', options.active);
    const response = await client.request<{ items: HoldAnswer[]; detail?: string }>(
      'GET',
      `v1/workspaces/${workspaceId}/holds?${query.toString()}`,
    );
    return answer('hold list', response, out, err, (page) => page.items.map(describeHold));
  });
}

/** `flightdeck hold delete <id>`: what it held goes on. */
export function holdDeleteCommand(
  id: string,
  options: WorkspaceConnectionOptions,
  out = stdout,
  err = stderr,
): Promise<number> {
  return runWorkspaceCommand('hold delete', options, err, async (client, workspaceId) => {
    const response = await client.request<HoldAnswer>(
      'DELETE',
      `v1/workspaces/${workspaceId}/holds/${encodeURIComponent(id)}`,
    );
    return answer('hold delete', response, out, err, (hold) => [`deleted ${describeHold(hold)}`]);
  });
}
