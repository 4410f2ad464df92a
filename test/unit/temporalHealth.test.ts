import { decodeHealthCheckStatus, encodeHealthCheckRequest } from '../../cli/temporalHealth';

describe('the gRPC health check codec', () => {
  it('encodes the service name as field 1', () => {
    expect([...encodeHealthCheckRequest('ab')]).toEqual([0x0a, 2, 0x61, 0x62]);
    const long = encodeHealthCheckRequest('x'.repeat(200));
    expect([...long.subarray(0, 3)]).toEqual([0x0a, 0xc8, 0x01]);
    expect(long).toHaveLength(203);
  });

  it('reads the status, skipping fields it does not know', () => {
    expect(decodeHealthCheckStatus(Buffer.from([0x08, 0x01]))).toBe(1);
    expect(decodeHealthCheckStatus(Buffer.from([0x08, 0x02]))).toBe(2);
    expect(decodeHealthCheckStatus(Buffer.alloc(0))).toBe(0);
    // field 2 (length-delimited, 3 bytes), field 3 (varint 300), then the status
    const withOthers = Buffer.from([0x12, 3, 1, 2, 3, 0x18, 0xac, 0x02, 0x08, 0x03]);
    expect(decodeHealthCheckStatus(withOthers)).toBe(3);
  });

  it('refuses a truncated message', () => {
    expect(() => decodeHealthCheckStatus(Buffer.from([0x08, 0x80]))).toThrow('malformed');
  });
});
