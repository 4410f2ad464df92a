import fs from 'node:fs';
import path from 'node:path';
import { WORKFLOW_DOMAIN_MODULES } from '../../worker/workflowSource';

const WORKFLOWS_DIR = path.join(__dirname, '..', '..', 'workflows');

/** The domain modules a workflow file imports values from (type-only imports are erased). */
function domainValueImports(source: string): string[] {
  const imports = source.matchAll(/import\s+(type\s+)?([^;]*?)\s+from\s+'\.\.\/domain\/(\w+)'/gs);
  return [...imports]
    .filter(([, typeOnly, names]) => !typeOnly && !/^\{(\s*type\s+\w+\s*,?)*\s*\}$/.test(names!))
    .map(([, , , module]) => module!);
}

describe('workflow bundle', () => {
  it('shares exactly the domain modules the workflows import', () => {
    const imported = new Set(
      fs
        .readdirSync(WORKFLOWS_DIR)
        .filter((file) => file.endsWith('.ts'))
        .flatMap((file) => domainValueImports(fs.readFileSync(path.join(WORKFLOWS_DIR, file), 'utf8'))),
    );
    expect([...imported].sort()).toEqual([...WORKFLOW_DOMAIN_MODULES].sort());
  });

  it('tells value imports from type-only ones', () => {
    expect(domainValueImports("import type { A } from '../domain/a';")).toEqual([]);
    expect(domainValueImports("import { type A, type B } from '../domain/b';")).toEqual([]);
    expect(domainValueImports("import {\n  type A,\n  decide,\n} from '../domain/c';")).toEqual(['c']);
    expect(domainValueImports("import { decide } from '../domain/d';")).toEqual(['d']);
  });
});
