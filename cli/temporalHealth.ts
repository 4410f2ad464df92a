import { Client, credentials } from '@grpc/grpc-js';

/**
 * Whether a Temporal frontend serves, by the standard gRPC health protocol (grpc.health.v1), the
 * way `temporal operator cluster health` asks. The API's readiness needs nothing else of
 * Temporal, and the SDK's client would hold its whole protocol (several MB of protobuf
 * definitions) in the API's heap for this one question (ARCHITECTURE.md, "The processes of
 * `flightdeck start`").
 */

const CHECK_METHOD = '/grpc.health.v1.Health/Check';
/** The service the frontend reports on. */
const WORKFLOW_SERVICE = 'temporal.api.workflowservice.v1.WorkflowService';
/** `HealthCheckResponse.ServingStatus.SERVING`. */
const SERVING = 1;
const STATUS_NAMES = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** `HealthCheckRequest { string service = 1; }` in protobuf's wire format. */
export function encodeHealthCheckRequest(service: string): Buffer {
  const name = Buffer.from(service, 'utf8');
  return Buffer.concat([Buffer.from([0x0a]), varint(name.length), name]);
}

/** `HealthCheckResponse { ServingStatus status = 1; }`: the status, 0 (UNKNOWN) when absent. */
export function decodeHealthCheckStatus(message: Buffer): number {
  let status = 0;
  let at = 0;
  const readVarint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= message.length || shift > 49) throw new Error('malformed health check response');
      const byte = message[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < message.length) {
    const tag = readVarint();
    const wireType = tag % 8;
    if (wireType === 0) {
      const value = readVarint();
      if (Math.floor(tag / 8) === 1) status = value;
    } else if (wireType === 2) {
      // Read first: `at += readVarint()` would add to the offset from before the length.
      const length = readVarint();
      at += length;
    } else if (wireType === 1) at += 8;
    else if (wireType === 5) at += 4;
    else throw new Error('malformed health check response');
  }
  return status;
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  for (let rest = value; ; rest = Math.floor(rest / 128)) {
    if (rest < 0x80) {
      bytes.push(rest);
      return Buffer.from(bytes);
    }
    bytes.push((rest % 128) | 0x80);
  }
}

export class TemporalHealth {
  private readonly client: Client;

  constructor(address: string) {
    this.client = new Client(address, credentials.createInsecure());
  }

  /** Resolves when the frontend says it serves within `timeoutMs`; rejects with what it said otherwise. */
  check(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        CHECK_METHOD,
        (service: string) => encodeHealthCheckRequest(service),
        decodeHealthCheckStatus,
        WORKFLOW_SERVICE,
        { deadline: Date.now() + timeoutMs },
        (error, status) => {
          if (error) reject(error);
          else if (status === SERVING) resolve();
          else
            reject(new Error(`Temporal's frontend is ${STATUS_NAMES[status ?? 0] ?? `in status ${status}`}`));
        },
      );
    });
  }

  close(): void {
    this.client.close();
  }
}
