import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { HEARTBEAT_TIMEOUT } from './definitions';
import { databaseSteps } from './steps';

const agents = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * A pushed job's remote run is looked at after 5 s, then less and less often while nothing
 * changes, up to every minute; a webhook makes the looks a fallback.
 */
const FIRST_FOLLOW_MS = 5_000;
const LONGEST_FOLLOW_MS = 60_000;

/**
 * How a workflow that owns jobs (a release's, a runbook run's) hands them to their agents: each
 * job is dispatched once, step by step; a pushed job is then followed on a durable timer; a
 * scheduled result (the test runner's) is completed after its delay. Whatever ends or changes calls
 * `wake`, so the owner looks at its jobs again.
 */
export class JobDriver {
  /** Jobs (and, for a release, verifications) this run has taken care of: each is done once. */
  readonly handled = new Set<string>();
  /** Work whose end the owner waits for before it continues as new (timers of scheduled results, probes). */
  readonly background = new Set<Promise<void>>();
  /** Pushed jobs followed by this run; `following` the loops still running, resumed by the next run. */
  private readonly followed = new Set<string>();
  readonly following = new Set<string>();

  constructor(private readonly wake: () => void) {}

  /** Hands a job to its agent, step by step; a pushed job is then followed, a scheduled result completed on a timer. */
  async dispatch(jobId: string): Promise<void> {
    this.handled.add(jobId);
    let result = await agents.dispatchJob(jobId);
    while (result.kind === 'next') result = await agents.dispatchJob(jobId, result.step);
    if (result.kind === 'triggered') this.startFollowing(jobId);
    // The job ended at dispatch (its configuration could not be dispatched): look again at once.
    if (result.kind === 'ended') this.wake();
    if (result.kind === 'scheduled') {
      const { afterSeconds, status, message } = result;
      this.inBackground(
        sleep(afterSeconds * 1000).then(() => databaseSteps.completeJob(jobId, status, message)),
      );
    }
  }

  /** Following a pushed job is not background work that must end before continue-as-new: the next run resumes it. */
  startFollowing(jobId: string): void {
    if (this.followed.has(jobId)) return;
    this.followed.add(jobId);
    this.following.add(jobId);
    void this.follow(jobId)
      .catch(() => undefined)
      .then(() => {
        this.following.delete(jobId);
        this.wake();
      });
  }

  /** The owner ended from outside (a cancel): one last look at each pushed job cancels its remote run. */
  async lastLooks(): Promise<void> {
    await Promise.all([...this.following].map((jobId) => agents.followJob(jobId)));
  }

  private async follow(jobId: string): Promise<void> {
    let delayMs = FIRST_FOLLOW_MS;
    for (;;) {
      await sleep(delayMs);
      const look = await agents.followJob(jobId);
      if (look.changed) this.wake();
      if (look.done) return;
      delayMs = look.changed ? FIRST_FOLLOW_MS : Math.min(delayMs * 2, LONGEST_FOLLOW_MS);
    }
  }

  /** Runs work alongside the owner's loop; its end wakes the loop, its failure is the work's own business. */
  inBackground(work: Promise<unknown>): void {
    const task: Promise<void> = work.then(
      () => undefined,
      () => undefined,
    );
    this.background.add(task);
    void task.then(() => {
      this.background.delete(task);
      this.wake();
    });
  }
}
