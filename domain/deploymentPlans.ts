/**
 * Deployment plans (Ctrlplane's): per release target, what each job of a proposed version would be
 * given — its merged configuration and variables, secrets shown as `{"sensitive": true}` — against
 * what the job of the target's current release was given.
 */

export type PlanResultStatus = 'completed' | 'errored';

export interface PlanResult {
  id: string;
  status: PlanResultStatus;
  hasChanges: boolean;
  contentHash: string;
  current: string;
  proposed: string;
  message: string;
}

export interface PlanTarget {
  environmentId: string;
  environmentName: string;
  resourceId: string;
  resourceName: string;
  hasChanges: boolean;
  results: PlanResult[];
}

export interface PlanSummary {
  total: number;
  changed: number;
  unchanged: number;
  errored: number;
  unsupported: number;
}

/** What a job is given, as a plan shows it: stable text, so equal inputs render equal. */
export function renderJobInputs(inputs: { config: unknown; variables: unknown } | null): string {
  return inputs ? JSON.stringify(sortKeys(inputs), null, 2) : '';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

/** One job's result; `contentHash` is the hash of `proposed` (computed where hashing is at hand). */
export function planResult(
  id: string,
  current: string,
  proposed: string,
  error: string | null,
  contentHash: string,
): PlanResult {
  return {
    id,
    status: error ? 'errored' : 'completed',
    hasChanges: current !== proposed,
    contentHash,
    current,
    proposed,
    message:
      error ?? (current === '' ? 'new on this target' : current === proposed ? 'no change' : 'changes'),
  };
}

/** Totals over the targets' results. */
export function summarize(targets: readonly PlanTarget[]): PlanSummary {
  const results = targets.flatMap((target) => target.results);
  const errored = results.filter((result) => result.status === 'errored').length;
  const changed = results.filter((result) => result.status !== 'errored' && result.hasChanges).length;
  return {
    total: results.length,
    changed,
    unchanged: results.length - errored - changed,
    errored,
    unsupported: 0,
  };
}
