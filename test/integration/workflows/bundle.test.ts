import fs from 'node:fs';
import { harnessValue } from '../../harness';

/**
 * The workflow bundle carries only what workflows decide with. Every cached workflow of a worker
 * pays for it: when runbook runs pulled domain/runbookRuns.ts (templates, agent schemas) into it,
 * the bundle grew from 2.7 to 6.3 MB and bench/fanout's worker from its usual peak to 1.7 GB at
 * 1,000 targets.
 */
describe('the workflow bundle', () => {
  it('holds no schema or template library', () => {
    const bundle = fs.readFileSync(harnessValue('workflowBundle'), 'utf8');
    for (const library of ['node_modules/zod/', 'node_modules/yaml/']) expect(bundle).not.toContain(library);
    expect(bundle.length).toBeLessThan(4_000_000);
  });
});
