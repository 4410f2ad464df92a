import type { OrchestrationMessage } from '../../domain/orchestration';
import { coalescingKey, leaseKey, settledLeases } from '../../worker/orchestrationDispatch';

const lease = (kind: 'lease.start' | 'lease.end', jobId: string, claimId: string): OrchestrationMessage =>
  kind === 'lease.start'
    ? { kind, workspaceId: 'w', jobAgentId: 'a', jobId, claimId }
    : { kind, jobId, claimId };

/** What the relay may leave out or share within one batch (worker/outboxRelay.ts). */
describe('outbox messages served together', () => {
  it('makes neither call for a lease started and ended in the same batch, and both otherwise', () => {
    const messages = [
      lease('lease.start', 'j1', 'c1'),
      lease('lease.start', 'j2', 'c2'),
      lease('lease.end', 'j1', 'c1'),
      lease('lease.end', 'j3', 'c3'),
      lease('lease.end', 'j2', 'c-older'),
    ];
    expect(settledLeases(messages)).toEqual(['j1/c1']);
    expect(leaseKey({ kind: 'release.wake', releaseIds: ['r'] })).toBeUndefined();
  });

  it('shares one call among the target rollouts a workspace asked for', () => {
    expect(coalescingKey({ kind: 'targets.added', workspaceId: 'w' })).toBe('targets.added/w');
    expect(coalescingKey({ kind: 'targets.added', workspaceId: 'w2' })).not.toBe('targets.added/w');
    expect(coalescingKey({ kind: 'release.wake', releaseIds: ['r'] })).toBeUndefined();
    expect(coalescingKey(lease('lease.start', 'j', 'c'))).toBeUndefined();
  });
});
