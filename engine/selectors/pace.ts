/**
 * Longest stretch of CPU work a paced task runs before it lets others in. An agent's request takes
 * a few turns of the event loop (one per query), each behind at most one slice, and a slice can
 * overrun by one indivisible piece (a large record's parse, or its evaluation, each up to ~10 ms):
 * 2 ms slices, with a turn between a record's parse and its evaluation, kept a neighbour's agents at
 * a p99 of 59–89 ms where 5 ms slices gave 102–114 ms on the same machine
 * (test/integration/security/noisyNeighbour.test.ts).
 */
export const SLICE_MS = 2;

/**
 * One slice of paced CPU work at a time in the process (docs/security.md "CEL budget").
 * Long loops of CPU work — CEL evaluated over thousands of records, mostly — run in slices of at
 * most `SLICE_MS`; between two slices the event loop turns once, so every request waiting on I/O
 * (an agent's claim, a poll, a heartbeat) is served between them, and the next slice goes to the
 * workspace whose turn it is (round robin), so one workspace's many scans never hold another's.
 */
class SliceScheduler {
  private running = false;
  /** Waiting tasks by workspace, in the order workspaces first asked. */
  private readonly waiting = new Map<string, (() => void)[]>();

  take(workspaceId: string): Promise<void> {
    return new Promise((grant) => {
      const queue = this.waiting.get(workspaceId);
      if (queue) queue.push(grant);
      else this.waiting.set(workspaceId, [grant]);
      if (!this.running) this.grantNext();
    });
  }

  give(): void {
    this.running = false;
    // The next slice starts after the event loop has turned: I/O waiting now is served first.
    setImmediate(() => {
      if (!this.running) this.grantNext();
    });
  }

  private grantNext(): void {
    const next = this.waiting.entries().next();
    if (next.done) return;
    const [workspaceId, queue] = next.value;
    const grant = queue.shift()!;
    // The workspace goes to the back of the line; its other tasks wait their next turn.
    this.waiting.delete(workspaceId);
    if (queue.length > 0) this.waiting.set(workspaceId, queue);
    this.running = true;
    grant();
  }
}

const scheduler = new SliceScheduler();
/**
 * Turns for large reads. Their rows are parsed as they arrive, outside any slice: one such read at a
 * time in the process (workspaces in turn) keeps that unpaced parsing to one read's worth between
 * two turns of the event loop, however many scans run at once.
 */
const readTurns = new SliceScheduler();

/**
 * A task's share of the slices: `await pacer.pace()` before each item of CPU work (takes a slice,
 * or a new one once the current slice has run `SLICE_MS`), `pacer.rest()` before waiting on I/O and
 * when the task ends (in a `finally`: a slice held by a task that ended would stop every other).
 */
export class Pacer {
  private holding = false;
  private sliceStarted = 0;

  constructor(private readonly workspaceId: string) {}

  async pace(): Promise<void> {
    if (this.holding && performance.now() - this.sliceStarted < SLICE_MS) return;
    this.rest();
    await scheduler.take(this.workspaceId);
    this.holding = true;
    this.sliceStarted = performance.now();
  }

  /**
   * Runs a read of large rows in the process's read turn. The turn is not a slice: a task that
   * holds it waits on I/O, while the tasks holding connections (in transactions) take only slices,
   * so the two never wait on each other.
   */
  async read<T>(io: () => Promise<T>): Promise<T> {
    this.rest();
    await readTurns.take(this.workspaceId);
    try {
      return await io();
    } finally {
      readTurns.give();
    }
  }

  rest(): void {
    if (!this.holding) return;
    this.holding = false;
    scheduler.give();
  }
}

/** Runs `task` with a pacer of its own, giving its slice back however the task ends. */
export async function paced<T>(workspaceId: string, task: (pacer: Pacer) => Promise<T>): Promise<T> {
  const pacer = new Pacer(workspaceId);
  try {
    return await task(pacer);
  } finally {
    pacer.rest();
  }
}
