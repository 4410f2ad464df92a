import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { JOB_STATUSES } from '../../domain/jobStatus';

/**
 * Ctrlplane's OpenAPI document (a reference kept beside the repository, at ../shared/reference: `findReference`), the differences
 * our documented behaviour wins over it, and validators of response bodies against its schemas.
 */

const REPOSITORY = path.join(__dirname, '../..');
const BESIDE = (repository: string) => path.join(repository, '../shared/reference/ctrlplane-openapi.json');

/**
 * Where the reference lies: FLIGHTDECK_CTRLPLANE_REFERENCE when set; beside this repository; or
 * beside the checkout this one was cloned from (CI tests a fresh clone of a local checkout, which has
 * the reference beside it). The first that exists; the plain one beside this repository otherwise.
 */
function findReference(): string {
  const candidates = [process.env.FLIGHTDECK_CTRLPLANE_REFERENCE, BESIDE(REPOSITORY), besideOrigin()];
  return candidates.find((file): file is string => !!file && fs.existsSync(file)) ?? BESIDE(REPOSITORY);
}

/** The reference's place beside the local checkout named by this clone's `origin`, if there is one. */
function besideOrigin(): string | undefined {
  try {
    const origin = execFileSync('git', ['-C', REPOSITORY, 'remote', 'get-url', 'origin'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const local = origin.startsWith('file://') ? new URL(origin).pathname : origin;
    if (!path.isAbsolute(local)) return undefined;
    return BESIDE(path.basename(local) === '.git' ? path.dirname(local) : local);
  } catch {
    return undefined;
  }
}

export const REFERENCE_PATH = findReference();

export const referenceAvailable = (): boolean => fs.existsSync(REFERENCE_PATH);

/** Said instead of skipping when the reference is not found (docs/development.md). */
const MISSING =
  `Ctrlplane's OpenAPI document was not found (looked for ${REFERENCE_PATH}, and beside the checkout this one ` +
  'was cloned from). Put it there, or set FLIGHTDECK_CTRLPLANE_REFERENCE to its path; on a machine without a ' +
  'copy, FLIGHTDECK_CTRLPLANE_REFERENCE=none skips the tests that read it (npm test does so, and says so, ' +
  'outside CI).';

/** Whether this machine says it has no copy of the reference (its tests are then skipped, by name). */
const declaredMissing = () => process.env.FLIGHTDECK_CTRLPLANE_REFERENCE === 'none';

/** `it` for a test that reads the reference: where it is missing, a failure that says why, never a silent skip. */
export function itWithReference(name: string, test: () => unknown): void {
  if (referenceAvailable()) it(name, test as jest.ProvidesCallback);
  else if (declaredMissing()) it.skip(`${name} (FLIGHTDECK_CTRLPLANE_REFERENCE=none)`, () => undefined);
  else
    it(name, () => {
      throw new Error(MISSING);
    });
}

/** `describe` for tests that read the reference, as `itWithReference`. */
export function describeWithReference(name: string, body: () => void): void {
  if (referenceAvailable()) describe(name, body);
  else if (declaredMissing()) describe.skip(`${name} (FLIGHTDECK_CTRLPLANE_REFERENCE=none)`, body);
  else
    describe(name, () =>
      it("finds Ctrlplane's reference document", () => {
        throw new Error(MISSING);
      }),
    );
}

/**
 * Where the reference and docs/behaviour.md (or docs/design.md "Decisions") disagree, ours wins: each difference by
 * the reference schema and property it is about, with what we do. `outputs` are the values we answer where the
 * reference's enum spells them otherwise.
 */
export const SPEC_WINS: Record<
  string,
  {
    schema: string;
    property?: string;
    ours: string;
    outputs?: readonly string[];
    /** The property is answered, as null when it has no value, where the reference's type has no null. */
    nullable?: boolean;
  }
> = {
  'deletedAt of a live resource': {
    schema: 'Resource',
    property: 'deletedAt',
    ours: 'SPEC.md "Resource record": deletedAt is in every answer, a date-time or null',
    nullable: true,
  },
  'an omitted resourceSelector': {
    schema: 'CreateDeploymentRequest',
    property: 'resourceSelector',
    ours: 'docs/behaviour.md ("Deployment"): when absent, any resource in the deployment’s environments may be targeted',
  },
  'job statuses on output': {
    schema: 'JobStatus',
    ours: 'snake_case (`in_progress`, `invalid_job_agent`), as decided; the reference’s camelCase is accepted on input',
    outputs: JOB_STATUSES,
  },
};

interface SchemaObject {
  type?: string;
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, unknown>;
}

interface MediaType {
  schema?: unknown;
}

export interface ReferenceDocument {
  paths: Record<
    string,
    Record<
      string,
      { operationId: string; responses: Record<string, { content?: Record<string, MediaType> }> }
    >
  >;
  components: { schemas: Record<string, SchemaObject> };
}

export function readReference(): ReferenceDocument {
  return JSON.parse(fs.readFileSync(REFERENCE_PATH, 'utf8')) as ReferenceDocument;
}

/**
 * The reference with exactly the SPEC_WINS differences relaxed: an enum also takes our spellings; a property we may
 * leave out is no longer required; one we answer as null takes null.
 */
export function relaxedReference(document: ReferenceDocument = readReference()): ReferenceDocument {
  const relaxed = structuredClone(document);
  for (const [difference, { schema, property, outputs, nullable }] of Object.entries(SPEC_WINS)) {
    const declared = relaxed.components.schemas[schema];
    if (!declared) throw new Error(`SPEC_WINS "${difference}": the reference has no schema ${schema}`);
    if (outputs) declared.enum = [...new Set([...(declared.enum ?? []), ...outputs])];
    if (property && nullable) {
      const declaredProperty = declared.properties?.[property] as { nullable?: boolean } | undefined;
      if (!declaredProperty) throw new Error(`SPEC_WINS "${difference}": ${schema} has no ${property}`);
      declaredProperty.nullable = true;
    } else if (property) declared.required = declared.required?.filter((name) => name !== property);
  }
  return relaxed;
}

/** Validates response bodies against the (relaxed) reference's response schema of an operation and status. */
export class ResponseValidator {
  private readonly ajv: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly document: ReferenceDocument = relaxedReference()) {
    // OpenAPI 3.0 schemas: `nullable` is a keyword, `example` and the like are annotations.
    this.ajv = new Ajv({ allErrors: true, strict: false });
    addFormats(this.ajv);
    this.ajv.addSchema({ components: document.components }, 'reference');
  }

  /** The operation's JSON response schema at that status, its `$ref`s pointing into the reference's components. */
  schemaOf(operationId: string, status: number): unknown {
    for (const item of Object.values(this.document.paths))
      for (const operation of Object.values(item))
        if (operation.operationId === operationId) {
          const schema = operation.responses[String(status)]?.content?.['application/json']?.schema;
          if (!schema) throw new Error(`${operationId} declares no JSON body for ${status}`);
          return schema;
        }
    throw new Error(`the reference has no operation ${operationId}`);
  }

  /** The body's differences from the operation's response schema, one line each; empty when it validates. */
  errors(operationId: string, status: number, body: unknown): string[] {
    const key = `${operationId} ${status}`;
    let validate = this.compiled.get(key);
    if (!validate) {
      const schema = JSON.parse(
        JSON.stringify(this.schemaOf(operationId, status)).replaceAll(
          '"#/components/',
          '"reference#/components/',
        ),
      ) as object;
      validate = this.ajv.compile(schema);
      this.compiled.set(key, validate);
    }
    return validate(body)
      ? []
      : (validate.errors ?? []).map((error: ErrorObject) => describeError(error, body));
  }
}

function describeError(error: ErrorObject, body: unknown): string {
  const at = error.instancePath || '(body)';
  const value = error.instancePath
    .split('/')
    .slice(1)
    .reduce<unknown>(
      (node, key) =>
        (node as Record<string, unknown> | undefined)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')],
      body,
    );
  const shown = JSON.stringify(value);
  return `${at} ${error.message ?? error.keyword} (${error.schemaPath})${
    shown && shown.length <= 80 ? `: ${shown}` : ''
  }`;
}
