import { Server, ServerCredentials } from '@grpc/grpc-js';
import { freePort } from '../../cli/embedded/processes';
import { decodeHealthCheckStatus, encodeHealthCheckRequest, TemporalHealth } from '../../cli/temporalHealth';
import { harnessValue } from '../harness';

describe("the API's Temporal health check", () => {
  it('passes against a serving frontend', async () => {
    const health = new TemporalHealth(harnessValue('temporalAddress'));
    try {
      await expect(health.check(3000)).resolves.toBeUndefined();
    } finally {
      health.close();
    }
  });

  it('fails when nothing listens', async () => {
    const health = new TemporalHealth(`127.0.0.1:${await freePort()}`);
    try {
      await expect(health.check(1000)).rejects.toThrow();
    } finally {
      health.close();
    }
  });

  it('fails, saying so, when the frontend does not serve', async () => {
    const server = new Server();
    let asked: string | undefined;
    server.addService(
      {
        Check: {
          path: '/grpc.health.v1.Health/Check',
          requestStream: false,
          responseStream: false,
          requestDeserialize: (bytes: Buffer) => bytes.subarray(2).toString('utf8'),
          requestSerialize: encodeHealthCheckRequest,
          responseSerialize: (status: number) => Buffer.from([0x08, status]),
          responseDeserialize: decodeHealthCheckStatus,
        },
      },
      {
        Check: (call: { request: string }, callback: (error: null, status: number) => void) => {
          asked = call.request;
          callback(null, 2);
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    const health = new TemporalHealth(`127.0.0.1:${port}`);
    try {
      await expect(health.check(3000)).rejects.toThrow('NOT_SERVING');
      expect(asked).toBe('temporal.api.workflowservice.v1.WorkflowService');
    } finally {
      health.close();
      server.forceShutdown();
    }
  });
});
