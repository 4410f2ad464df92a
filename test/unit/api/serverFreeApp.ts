import { randomUUID } from 'node:crypto';
import pino from 'pino';
import supertest from 'supertest';
import { createApp } from '../../../api/app';
import { FakeWorld, fakeStoreFactory } from './fakeStores';

/**
 * The API's Koa app as production builds it (api/app.ts `createApp`), over the in-memory fakes of
 * ./fakeStores.ts: no database, no Temporal, no listener (supertest drives `app.callback()`).
 * One workspace with an operator's key, an agent and a key scoped to it, and another workspace.
 */
export function serverFreeApp() {
  const world = new FakeWorld();
  const workspaceId = randomUUID();
  const otherWorkspaceId = randomUUID();
  const agentId = randomUUID();
  const { app } = createApp({
    stores: fakeStoreFactory(world),
    logger: pino({ level: 'silent' }),
    readiness: {},
    bodyLimit: '1mb',
    version: 'test',
    transport: { trustedProxies: [], allowInsecurePull: false },
  });
  return {
    world,
    http: supertest(app.callback()),
    workspaceId,
    otherWorkspaceId,
    agentId,
    /** The workspace's key, not scoped to an agent: what an operator or a pipeline holds. */
    operator: { 'x-api-key': world.issueKey(workspaceId, { name: 'operator key' }) },
    /** A key scoped to `agentId`: pull endpoints only. */
    agent: { 'x-api-key': world.issueKey(workspaceId, { jobAgentId: agentId, name: 'agent key' }) },
    /** The other workspace's key. */
    stranger: { 'x-api-key': world.issueKey(otherWorkspaceId, { name: 'stranger key' }) },
  };
}

export type ServerFreeApp = ReturnType<typeof serverFreeApp>;
