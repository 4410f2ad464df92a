import * as versionDependency from '../../../domain/rules/versionDependency';
import type { DependencyFact } from '../../../domain/rules/versionDependency';
import { readyVersion } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');

const dependency = (tag: string | null): DependencyFact => ({
  deploymentId: 'd-db',
  deploymentName: 'db',
  versionSelector: 'version.tag.startsWith("v2.")',
  currentVersion: tag ? readyVersion(tag, NOW.toISOString()) : null,
});

const verdicts = (dependencies: DependencyFact[] | undefined) =>
  versionDependency.evaluate({ versionDependencies: dependencies });

describe("versionDependency: the version's own dependencies", () => {
  it("passes when the dependency's current version on the resource matches", () => {
    expect(verdicts([dependency('v2.0.1')])).toEqual([
      { kind: 'versionDependency', state: 'passed', reason: 'db runs v2.0.1' },
    ]);
  });

  it('waits, never blocks, until a matching version runs here: a release of the dependency wakes it', () => {
    expect(verdicts([dependency(null)])).toEqual([
      {
        kind: 'versionDependency',
        state: 'waiting',
        reason: 'db has no version deployed here yet',
        waitingOn: { deploymentId: 'd-db' },
      },
    ]);
    expect(verdicts([dependency('v1.9.0')])[0]).toMatchObject({
      state: 'waiting',
      reason: 'db runs v1.9.0 here, which does not match version.tag.startsWith("v2.")',
    });
  });

  it('answers one verdict per dependency, and none for a version without any (or an older history)', () => {
    expect(verdicts([dependency('v2.0.1'), dependency(null)]).map((v) => v.state)).toEqual([
      'passed',
      'waiting',
    ]);
    expect(verdicts([])).toEqual([]);
    expect(verdicts(undefined)).toEqual([]);
  });
});
