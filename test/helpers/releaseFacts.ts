import type { ReleaseFacts } from '../../domain/gates';
import type { HoldFact } from '../../domain/holds';
import type { PolicyRule } from '../../domain/policies';

/**
 * A release's gate facts for tests: a ready version on a free target, no policies unless `rules`
 * are given (then one policy holds them all). `now` anchors every time in them.
 */
export function releaseFacts(
  now: Date,
  overrides: Partial<ReleaseFacts> = {},
  rules: Partial<PolicyRule>[] = [],
): ReleaseFacts {
  const tenMinutesAgo = new Date(now.getTime() - 10 * 60_000).toISOString();
  return {
    release: { id: 'r1', environmentId: 'e1', createdAt: tenMinutesAgo },
    version: { ...readyVersion('1.0.0', tenMinutesAgo), id: 'v1', name: null },
    deployment: { id: 'd1', name: 'api', slug: 'api', metadata: {} },
    environment: { id: 'e1', name: 'prod', metadata: {} },
    resource: { kind: 'service', version: 'v1', name: 'node', identifier: 'node', metadata: {}, config: {} },
    targetExists: true,
    policies:
      rules.length > 0
        ? [
            {
              id: 'p1',
              name: 'policy',
              rules: rules.map((rule, i) => ({ id: `rule-${i}`, ...rule })) as PolicyRule[],
            },
          ]
        : [],
    approvals: [],
    progression: [],
    activeReleaseId: null,
    deployedVersionCreatedAt: null,
    deployedVersionId: null,
    newerReleases: [],
    rollout: { position: 0, total: 1, startedAt: tenMinutesAgo },
    ...overrides,
  };
}

/** A ready version as facts carry it: id `v-<tag>`, named after its tag. */
export function readyVersion(tag: string, createdAt: string): ReleaseFacts['version'] {
  return { id: `v-${tag}`, tag, name: tag, status: 'ready', metadata: {}, config: {}, createdAt };
}

/** A hold that blocks (an incident by Ada), with `extra` over it. */
export function blockHold(extra: Partial<HoldFact> = {}): HoldFact {
  return { id: 'h1', effect: 'block', reason: 'incident', createdBy: { id: 'k1', name: 'Ada' }, ...extra };
}

/** A hold that pins `versionId` (its tag the same), with `extra` over it. */
export function pinHold(versionId: string, extra: Partial<HoldFact> = {}): HoldFact {
  return blockHold({
    id: `pin-${versionId}`,
    effect: 'pin',
    reason: 'stay',
    version: { id: versionId, tag: versionId },
    ...extra,
  });
}

/** A freeze's schedule: daily from 11:00 to 13:00 UTC. */
export const NOON_FREEZE = {
  rrule: 'DTSTART:20261101T110000\nRRULE:FREQ=DAILY',
  durationSeconds: 7200,
  timeZone: 'UTC',
};
