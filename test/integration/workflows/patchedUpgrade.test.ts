import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import { wakeSignal } from '../../../workflows/definitions';
import { workflowIds } from '../../../workflows/ids';
import { releaseWorkflow } from '../../../workflows/release';
import { eventually } from '../../helpers/eventually';
import { activitiesOf, FakeRelease } from '../../helpers/fakeRelease';
import { buildPatchedBundle, PATCH_ID } from '../../helpers/patchedBundle';
import { releaseFacts } from '../../helpers/releaseFacts';
import { withWorker, workflowEnvironment } from '../../helpers/workflowEnvironment';

/**
 * An upgrade under running releases: releases waiting at a gate and releases whose job runs are
 * left by a worker on today's bundle; a worker whose release workflow carries a change behind
 * `patched` (test/helpers/patchedBundle.ts) takes over, and every release finishes without a
 * failed workflow task. Without the `patched` guard the running releases' replay fails.
 */

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await workflowEnvironment();
});
afterAll(async () => {
  await env?.teardown();
});

const { EventType } = temporal.api.enums.v1;

it('releases at a gate and with a running job finish on a worker whose bundle carries a patched change', async () => {
  const patchedBundle = await buildPatchedBundle();
  const gated = [0, 1].map(() => {
    const release = new FakeRelease(randomUUID());
    release.facts = releaseFacts(new Date(), {}, [{ anyApproval: { minApprovals: 1 } }]);
    return release;
  });
  const running = [0, 1].map(() => new FakeRelease(randomUUID()));
  const releases = [...gated, ...running];
  const activities = activitiesOf(releases);
  const taskQueue = `upgrade-${randomUUID()}`;

  const handles = await withWorker(
    env,
    activities,
    async () => {
      const handles = await Promise.all(
        releases.map((release) =>
          env.client.workflow.start(releaseWorkflow, {
            taskQueue,
            workflowId: workflowIds.release(release.id),
            args: [{ releaseId: release.id }],
          }),
        ),
      );
      await eventually(
        () =>
          gated.every((release) => release.evaluations.at(-1)?.decision === 'wait') &&
          running.every((release) => release.jobs[0]?.status === 'queued'),
        { what: 'releases at their gate and at their job' },
      );
      return handles;
    },
    { taskQueue },
  );

  const outcomes = await withWorker(
    env,
    activities,
    async () => {
      await Promise.all(
        gated.map(async (release, index) => {
          release.facts.approvals.push({
            userId: 'u1',
            userName: 'Ada',
            status: 'approved',
            reason: null,
            at: new Date().toISOString(),
          });
          await handles[index]!.signal(wakeSignal);
        }),
      );
      await Promise.all(releases.map((release, index) => release.report(handles[index]!, 'successful')));
      return Promise.all(handles.map((handle) => handle.result()));
    },
    { taskQueue, codePath: patchedBundle },
  );

  expect(outcomes.map((outcome) => outcome.phase)).toEqual(releases.map(() => 'succeeded'));
  for (const [index, handle] of handles.entries()) {
    const release = releases[index]!;
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.filter((event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)).toEqual(
      [],
    );
    const patchMarkers = events.filter(
      (event) =>
        event.markerRecordedEventAttributes?.markerName === 'core_patch' &&
        Object.values(event.markerRecordedEventAttributes.details ?? {}).some((payloads) =>
          payloads.payloads?.some((payload) =>
            Buffer.from(payload.data ?? [])
              .toString('utf8')
              .includes(PATCH_ID),
          ),
        ),
    );
    // Each release replays its old history without the change, and takes it from its first look after the upgrade.
    expect(patchMarkers).toHaveLength(1);
    expect(release.calls).toContain('releaseRules');
  }
});
