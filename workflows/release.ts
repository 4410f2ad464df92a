import { setHandler } from '@temporalio/workflow';
import { releaseStateQuery, wakeSignal } from './definitions';
import { ReleaseRun, type ReleaseOutcome, type ReleaseWorkflowInput } from './releaseRun';

export type { ReleaseOutcome, ReleaseWorkflowInput } from './releaseRun';

/**
 * `release/<releaseId>`: one release from creation to its end (docs/behaviour.md "Flow" steps 3–7).
 *
 * 1. Gates: read the facts, evaluate every policy rule (domain/gates.ts), and either start the jobs,
 *    wait (for a wake signal, or on a durable timer until a window opens or soak time ends), or end
 *    (superseded by a newer version, or withdrawn).
 * 2. Jobs: dispatch each through its agent type, wait for their statuses (agents report them; each
 *    report wakes this workflow), run verifications on durable timers, retry failures as the retry
 *    rule allows, and end the release: a success becomes the target's current release.
 *
 * The database is the truth; this workflow only decides (workflows/releaseRun.ts, with the rules in
 * domain/releaseProgress.ts). Every wake means "look again", so lost or repeated signals are
 * harmless, and history stays bounded by continuing as new.
 */
export async function releaseWorkflow(input: ReleaseWorkflowInput): Promise<ReleaseOutcome> {
  const release = new ReleaseRun(input);
  setHandler(wakeSignal, () => release.wake());
  setHandler(releaseStateQuery, () => release.view);
  return release.run();
}
