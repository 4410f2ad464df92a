import { setImmediate as yieldToEventLoop } from 'node:timers/promises';

/** Longest stretch of CPU work a loop runs before it lets other requests in. */
export const SLICE_MS = 10;

/**
 * Lets the rest of the process run between slices of a long loop of CPU work (CEL evaluated
 * over thousands of records, mostly): `await pacer.pace()` between items yields to the event loop
 * once the current slice has run `SLICE_MS`, so one workspace's scan never holds every other
 * workspace's requests (README "Security model", CEL budget).
 */
export class Pacer {
  private sliceStarted = performance.now();

  async pace(): Promise<void> {
    if (performance.now() - this.sliceStarted < SLICE_MS) return;
    await yieldToEventLoop();
    this.sliceStarted = performance.now();
  }
}
