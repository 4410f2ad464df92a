import type { ReleaseFacts } from '../../domain/gates';
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
    version: {
      id: 'v1',
      tag: '1.0.0',
      name: null,
      status: 'ready',
      metadata: {},
      config: {},
      createdAt: tenMinutesAgo,
    },
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
