import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { workflowIds } from '../../../workflows/ids';
import { webhookDeliveryWorkflow } from '../../../workflows/webhookDelivery';
import { recordAfterEach } from '../../helpers/histories';
import { withWorker, workflowEnvironment } from '../../helpers/workflowEnvironment';

/** The webhook delivery workflow on its own, its receiver scripted: retried until taken, or given up. */

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await workflowEnvironment();
});
afterAll(async () => {
  await env?.teardown();
});

/** Workflows started by the current test, each recorded as its fixture after it. */
const recordAfterTest = recordAfterEach(() => env.client.workflow);

/** A receiver that fails `failures` times, then takes the event (or refuses it for good). */
function scriptedReceiver(failures: number, final: 'taken' | 'refused') {
  const attempts: number[] = [];
  const abandoned: string[] = [];
  return {
    attempts,
    abandoned,
    activities: {
      async deliverWebhook() {
        attempts.push(Date.now());
        if (attempts.length <= failures) throw new Error('the receiver answered 503');
        if (final === 'refused') throw ApplicationFailure.nonRetryable('the receiver is gone');
      },
      async abandonWebhookDelivery(_deliveryId: string, error: string) {
        abandoned.push(error);
      },
    },
  };
}

async function deliver(taskQueue: string, fixture: string) {
  const deliveryId = randomUUID();
  const handle = await env.client.workflow.start(webhookDeliveryWorkflow, {
    taskQueue,
    workflowId: workflowIds.webhookDelivery(deliveryId),
    args: [{ deliveryId }],
  });
  recordAfterTest(handle, fixture);
  return handle.result();
}

describe('webhookDeliveryWorkflow', () => {
  it('sends again with growing pauses until the receiver takes the event', async () => {
    const receiver = scriptedReceiver(2, 'taken');
    await withWorker(env, receiver.activities, (taskQueue) =>
      deliver(taskQueue, 'webhook-delivered-after-retries'),
    );
    expect(receiver.attempts).toHaveLength(3);
    const [first, second, third] = receiver.attempts as [number, number, number];
    expect(second - first).toBeGreaterThanOrEqual(900);
    expect(third - second).toBeGreaterThanOrEqual(1_400);
    expect(receiver.abandoned).toEqual([]);
  });

  it('marks the delivery failed when its attempts end', async () => {
    const receiver = scriptedReceiver(0, 'refused');
    await withWorker(env, receiver.activities, (taskQueue) => deliver(taskQueue, 'webhook-abandoned'));
    expect(receiver.attempts).toHaveLength(1);
    expect(receiver.abandoned).toEqual([expect.stringContaining('the receiver is gone')]);
  });
});
