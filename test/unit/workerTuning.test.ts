import { cachedWorkflowsFor, WORKFLOW_TASK_SLOTS, workerTuning } from '../../worker/tuning';

describe('worker tuning', () => {
  it('sizes the workflow cache from its memory budget, never below the task slots', () => {
    expect(cachedWorkflowsFor(350)).toBe(1024);
    expect(cachedWorkflowsFor(700)).toBe(2048);
    expect(cachedWorkflowsFor(16)).toBe(WORKFLOW_TASK_SLOTS);
    expect(workerTuning(350)).toMatchObject({
      maxCachedWorkflows: 1024,
      maxConcurrentWorkflowTaskExecutions: 50,
    });
  });
});
