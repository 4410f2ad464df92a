import type { PolicyRule } from '../../../domain/policies';
import * as versionSelector from '../../../domain/rules/versionSelector';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');

const verdicts = (rules: Partial<PolicyRule>[]) => versionSelector.evaluate(releaseFacts(NOW, {}, rules));

describe('versionSelector: every selector rule together', () => {
  it('passes a version every selector admits, and without any selector', () => {
    expect(verdicts([{ versionSelector: { selector: 'version.tag.startsWith("1.")' } }])).toEqual([
      { kind: 'versionSelector', state: 'passed', reason: 'the version is selected' },
    ]);
    expect(verdicts([])).toEqual([
      { kind: 'versionSelector', state: 'passed', reason: 'the version is selected' },
    ]);
  });

  it('is blocked by the first selector that excludes the version, named by its description', () => {
    const rules = [
      { versionSelector: { selector: 'version.tag.startsWith("1.")' } },
      { versionSelector: { selector: 'version.tag.startsWith("2.")', description: 'the 2.x line only' } },
      { versionSelector: { selector: 'version.tag.startsWith("3.")' } },
    ];
    expect(verdicts(rules)).toEqual([
      { kind: 'versionSelector', state: 'blocked', reason: 'excluded by version selector the 2.x line only' },
    ]);
    expect(verdicts([rules[2]!])[0]!.reason).toBe(
      'excluded by version selector version.tag.startsWith("3.")',
    );
  });

  it('sees the target: a selector may admit a version on one environment only', () => {
    const onProd = [{ versionSelector: { selector: 'environment.name == "prod"' } }];
    expect(verdicts(onProd)[0]!.state).toBe('passed');
    const facts = releaseFacts(NOW, { environment: { id: 'e2', name: 'staging', metadata: {} } }, onProd);
    expect(versionSelector.evaluate(facts)[0]!.state).toBe('blocked');
  });
});
