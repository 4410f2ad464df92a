import type { Context } from '@temporalio/activity';
import { activityHeartbeats } from '../../worker/activityHeartbeats';

/** docs/design.md "Invariants" 6: ordinary activities heartbeat while they run, so a dead worker is noticed in seconds. */
describe('activity heartbeats', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function run(isLocal: boolean, workMs: number) {
    const heartbeat = jest.fn();
    const context = { info: { isLocal }, heartbeat } as unknown as Context;
    const execute = activityHeartbeats(context).inbound!.execute!;
    const done = execute(
      { args: [], headers: {} },
      () => new Promise((resolve) => setTimeout(() => resolve('done'), workMs)),
    );
    return { heartbeat, done };
  }

  it('heartbeats an ordinary activity every 2 s until it ends, then stops', async () => {
    const { heartbeat, done } = run(false, 7_000);
    expect(heartbeat).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(7_000);
    await expect(done).resolves.toBe('done');
    expect(heartbeat).toHaveBeenCalledTimes(3);
    await jest.advanceTimersByTimeAsync(10_000);
    expect(heartbeat).toHaveBeenCalledTimes(3);
  });

  it('sends nothing for an activity that ends within the first interval', async () => {
    const { heartbeat, done } = run(false, 1_500);
    await jest.advanceTimersByTimeAsync(1_500);
    await expect(done).resolves.toBe('done');
    await jest.advanceTimersByTimeAsync(10_000);
    expect(heartbeat).not.toHaveBeenCalled();
  });

  it('leaves local activities alone', async () => {
    const { heartbeat, done } = run(true, 5_000);
    await jest.advanceTimersByTimeAsync(5_000);
    await expect(done).resolves.toBe('done');
    expect(heartbeat).not.toHaveBeenCalled();
  });
});
