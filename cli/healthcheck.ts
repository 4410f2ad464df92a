#!/usr/bin/env node
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import { Connection } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { loadConfig, type Config } from './config';

/**
 * Container health checks (Dockerfile, docker-compose.yml): `node dist/cli/healthcheck.js api` or
 * `... worker` exits 0 when healthy, 1 with a reason otherwise. A separate entry point, not a
 * `flightdeck` command, because it runs every few seconds in every container and should not load
 * the whole service.
 *
 * - api: the local listener answers `GET /healthz` (liveness; load balancers route by `/readyz`).
 * - worker: Temporal saw this container's worker poll the task queue recently. The SDK names a
 *   worker `<pid>@<hostname>` and a container's hostname is its own, so replicas are told apart
 *   without a port or a file of their own.
 */

/** Idle workers long-poll for about a minute, so a live one is seen at least that often. */
const POLL_SEEN_WITHIN_MS = 2 * 60_000;

/** Whether a poller from this host was seen within `maxAgeMs` of `now`. */
function pollerSeen(
  pollers: readonly temporal.api.taskqueue.v1.IPollerInfo[],
  hostname: string,
  now: number,
  maxAgeMs: number,
): boolean {
  return pollers.some((poller) => {
    if (!poller.identity?.endsWith(`@${hostname}`)) return false;
    const seen = optionalTsToMs(poller.lastAccessTime);
    return seen !== undefined && now - seen <= maxAgeMs;
  });
}

function checkApi(config: Config): Promise<void> {
  const client = config.api.tls ? https : http;
  // The certificate names the public host, not loopback; this checks liveness, not identity.
  const url = `${config.api.tls ? 'https' : 'http'}://127.0.0.1:${config.api.port}/healthz`;
  return new Promise((resolve, reject) => {
    const request = client.get(url, { timeout: 3000, rejectUnauthorized: false }, (response) => {
      response.resume();
      if (response.statusCode === 200) resolve();
      else reject(new Error(`${url} answered ${response.statusCode}`));
    });
    request.on('timeout', () => request.destroy(new Error(`${url} did not answer within 3 s`)));
    request.on('error', reject);
  });
}

async function checkWorker(config: Config): Promise<void> {
  if (!config.temporal.address) throw new Error('TEMPORAL_ADDRESS is not set');
  const connection = await Connection.connect({ address: config.temporal.address, connectTimeout: 3000 });
  try {
    const { pollers } = await connection.workflowService.describeTaskQueue({
      namespace: config.temporal.namespace,
      taskQueue: { name: config.temporal.taskQueue },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    if (!pollerSeen(pollers ?? [], os.hostname(), Date.now(), POLL_SEEN_WITHIN_MS)) {
      throw new Error(
        `no worker of ${os.hostname()} polled task queue ${config.temporal.taskQueue} in the last two minutes`,
      );
    }
  } finally {
    await connection.close();
  }
}

async function main(role: string | undefined): Promise<void> {
  const config = loadConfig();
  if (role === 'api') await checkApi(config);
  else if (role === 'worker') await checkWorker(config);
  else throw new Error('usage: healthcheck.js api|worker');
}

if (require.main === module) {
  main(process.argv[2]).then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`unhealthy: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
