import fs from 'node:fs';
import { apiRoutes } from '../../api/app';
import { JobStatusInput } from '../../api/schemas/job';
import operations from '../fixtures/ctrlplane-operations.json';
import { itWithReference, REFERENCE_PATH, SPEC_WINS } from '../helpers/ctrlplaneReference';

/**
 * Every operation of Ctrlplane's REST API is served, with its success status, unless it is listed
 * below with the reason (docs/api.md "Conventions"). The operations are derived from Ctrlplane's OpenAPI
 * document by `scripts/ctrlplane-operations.mjs`; where that document is at hand (../shared/reference), the
 * derived list is checked against it.
 */

/** Operations not served yet, each with why. */
const UNSERVED: Record<string, string> = {};

/** Operations served with another success status, each with why (docs/behaviour.md or docs/design.md decides). */
const OTHER_STATUS: Record<string, { status: number; reason: string }> = {
  requestResourceDeletionByIdentifier: {
    status: 200,
    reason:
      'Ctrlplane\'s server and its e2e suite answer 200 with {id, message}; only its document says 202 (docs/api.md "Conventions")',
  },
};

interface Operation {
  operationId: string;
  method: string;
  path: string;
  success: number;
}

const template = (route: string) => route.replace(/\{[^}]+\}/g, '{}');

/** Every served method and path (aliases too), with the lowest success status it declares. */
const served = new Map<string, number>(
  apiRoutes.flatMap((route) => {
    const status = Math.min(
      ...Object.keys(route.responses)
        .map(Number)
        .filter((code) => code >= 200 && code < 300),
    );
    return [route.path, ...route.aliases].map(
      (spelling) =>
        [`${route.method} ${template(route.root ? spelling : `/v1${spelling}`)}`, status] as const,
    );
  }),
);

describe('Ctrlplane compatibility', () => {
  const reference = REFERENCE_PATH;

  itWithReference('derives its operations from the reference document', () => {
    const document = JSON.parse(fs.readFileSync(reference, 'utf8')) as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    const ids = Object.values(document.paths)
      .flatMap((item) => Object.values(item).map((operation) => operation.operationId))
      .filter(Boolean)
      .sort();
    expect((operations as Operation[]).map((operation) => operation.operationId).sort()).toEqual(ids);
  });

  it('serves every operation of the reference with its success status, or says why not', () => {
    const problems: string[] = [];
    for (const operation of operations as Operation[]) {
      const status = served.get(`${operation.method} ${template(operation.path)}`);
      const excluded = UNSERVED[operation.operationId];
      if (status === undefined) {
        if (!excluded)
          problems.push(
            `${operation.operationId}: ${operation.method.toUpperCase()} ${operation.path} is not served`,
          );
        continue;
      }
      if (excluded) problems.push(`${operation.operationId} is served now: take it off UNSERVED`);
      const expected = OTHER_STATUS[operation.operationId]?.status ?? operation.success;
      if (status !== expected)
        problems.push(`${operation.operationId}: answers ${status}, the reference ${operation.success}`);
    }
    expect(problems).toEqual([]);
  });

  itWithReference(
    'lists each difference our documented behaviour wins, about schemas the reference has',
    () => {
      const document = JSON.parse(fs.readFileSync(reference, 'utf8')) as {
        components: { schemas: Record<string, { properties?: Record<string, unknown>; enum?: string[] }> };
      };
      for (const [difference, { schema, property }] of Object.entries(SPEC_WINS)) {
        const declared = document.components.schemas[schema];
        expect([difference, declared !== undefined]).toEqual([difference, true]);
        if (property)
          expect([difference, property in (declared!.properties ?? {})]).toEqual([difference, true]);
      }
      // The job status difference as it stands: camelCase in, snake_case out.
      expect(document.components.schemas.JobStatus!.enum).toContain('inProgress');
      expect(JobStatusInput.parse('inProgress')).toBe('in_progress');
    },
  );

  it('keeps its exclusion lists short and about operations that exist', () => {
    const ids = new Set((operations as Operation[]).map((operation) => operation.operationId));
    for (const id of [...Object.keys(UNSERVED), ...Object.keys(OTHER_STATUS)]) expect(ids.has(id)).toBe(true);
  });
});
