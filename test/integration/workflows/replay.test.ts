import { Worker } from '@temporalio/worker';
import { harnessValue } from '../../harness';
import { describeReplayFailure, recordedHistories, recording } from '../../helpers/histories';

/**
 * Every recorded history (test/fixtures/histories/, `npm run histories:record`) replays against
 * the workflow bundle the workers run: a change to workflow code that running workflows could not
 * take fails here, naming the fixture, the workflow and the event.
 */
const maybe = recording ? describe.skip : describe;

maybe('recorded workflow histories', () => {
  it('replay against the current workflow code', async () => {
    const fixtures = await recordedHistories();
    const kinds = new Set(fixtures.map(({ recorded }) => recorded.workflowType));
    expect([...kinds].sort()).toEqual([
      'approvalScopeWorkflow',
      'holdWorkflow',
      'leaseWorkflow',
      'releaseWorkflow',
      'rolloutWavesWorkflow',
      'targetRolloutWorkflow',
      'versionRolloutWorkflow',
      'webhookDeliveryWorkflow',
    ]);

    const runs = fixtures.flatMap(({ name, recorded, runs }) =>
      runs.map((history, index) => ({ name: `${name} run ${index + 1}`, recorded, history })),
    );
    const replays = Worker.runReplayHistories(
      { workflowBundle: { codePath: harnessValue('workflowBundle') } },
      runs.map(({ recorded, history }) => ({ workflowId: recorded.workflowId, history })),
    );
    const failures: string[] = [];
    let index = 0;
    for await (const result of replays) {
      const { name, recorded, history } = runs[index++]!;
      if (result.error)
        failures.push(`${name}: ${recorded.workflowType} ${describeReplayFailure(history, result.error)}`);
    }
    expect(index).toBe(runs.length);
    expect(failures).toEqual([]);
  });
});
