import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { z, ZodType } from 'zod';
import { DeploymentBody } from '../../api/schemas/deployment';
import { EnvironmentBody } from '../../api/schemas/environment';
import { JobAgentBody } from '../../api/schemas/jobAgent';
import { PolicyBody } from '../../api/schemas/policy';
import { UpsertResourceBody } from '../../api/schemas/resource';
import { SystemBody } from '../../api/schemas/system';
import { VariableBody, VariableValueBody } from '../../api/schemas/variable';
import { CreateVersionBody } from '../../api/schemas/version';
import { slugify } from '../../domain/slug';

/**
 * The documents `flightdeck apply` reads: multi-document YAML, one record per document, named by
 * `type`. Bodies are checked with the very schemas the API validates requests with, so a file that
 * passes here is one the server accepts (and every spelling the API takes, the applier's
 * `jobAgent.ref` + `jobAgentConfig` and the provider's `default_value`, `literal_value`,
 * `reference_value`, `resource_selector`, is taken here too).
 */

export const DOCUMENT_TYPES = [
  'JobAgent',
  'System',
  'Environment',
  'Deployment',
  'Resource',
  'Policy',
  'DeploymentVersion',
] as const;
type DocumentType = (typeof DOCUMENT_TYPES)[number];

/** Where a document came from: its file and its 1-based position among the file's documents. */
export interface Source {
  file: string;
  index: number;
}

export interface DesiredVariable {
  body: z.output<typeof VariableBody>;
  values: z.output<typeof VariableValueBody>[];
}

interface Common {
  source: Source;
  /** What the document is about, for messages: `Deployment "api"`, `DeploymentVersion "api@1.2.0"`. */
  label: string;
  /** The record's identity within its type (name, slug, identifier, deployment/tag). */
  key: string;
}

export type Desired = Common &
  (
    | { type: 'JobAgent'; body: z.output<typeof JobAgentBody> }
    | { type: 'System'; body: z.output<typeof SystemBody> & { slug: string } }
    | { type: 'Environment'; body: z.output<typeof EnvironmentBody>; systems?: string[] }
    | {
        type: 'Deployment';
        body: z.output<typeof DeploymentBody>;
        systems?: string[];
        variables?: DesiredVariable[];
      }
    | { type: 'Resource'; identifier: string; body: z.output<typeof UpsertResourceBody> }
    | { type: 'Policy'; body: z.output<typeof PolicyBody> }
    | { type: 'DeploymentVersion'; deployment: string; body: z.output<typeof CreateVersionBody> }
  );

export class DocumentError extends Error {
  constructor(
    readonly source: Source,
    readonly label: string | undefined,
    readonly problems: string[],
  ) {
    super(`${where(source, label)}: ${problems.join('; ')}`);
  }
}

export function where(source: Source, label?: string): string {
  return `${source.file}, document ${source.index}${label ? ` (${label})` : ''}`;
}

/** The `type` values accepted, in any case, with the short forms people write. */
const TYPE_SPELLINGS: Record<string, DocumentType> = Object.fromEntries([
  ...DOCUMENT_TYPES.map((type) => [type.toLowerCase(), type]),
  ['agent', 'JobAgent'],
  ['version', 'DeploymentVersion'],
]);

/** Keys a document may carry beside its body's. */
const ENVELOPE_KEYS: Record<DocumentType, string[]> = {
  JobAgent: ['agentType'],
  System: [],
  Environment: ['system', 'systems'],
  Deployment: ['system', 'systems', 'variables'],
  Resource: ['identifier'],
  Policy: [],
  DeploymentVersion: ['deployment'],
};

/** Reads every YAML file given (a directory stands for its *.yaml and *.yml files, sorted). */
export function readDocuments(paths: string[]): { documents: Desired[]; errors: DocumentError[] } {
  const documents: Desired[] = [];
  const errors: DocumentError[] = [];
  for (const file of paths.flatMap(expandPath)) {
    const text = fs.readFileSync(file, 'utf8');
    parseAllDocuments(text).forEach((document, position) => {
      const source = { file, index: position + 1 };
      if (document.errors.length > 0) {
        errors.push(
          new DocumentError(
            source,
            undefined,
            document.errors.map((error) => error.message),
          ),
        );
        return;
      }
      const content: unknown = document.toJS();
      if (content === null || content === undefined) return;
      try {
        documents.push(parseDocument(content, source));
      } catch (error) {
        if (error instanceof DocumentError) errors.push(error);
        else throw error;
      }
    });
  }
  errors.push(...duplicates(documents));
  return { documents, errors };
}

function expandPath(given: string): string[] {
  if (!fs.existsSync(given)) throw new Error(`${given}: no such file or directory`);
  if (!fs.statSync(given).isDirectory()) return [given];
  return fs
    .readdirSync(given)
    .filter((name) => /\.ya?ml$/i.test(name))
    .sort()
    .map((name) => path.join(given, name));
}

export function parseDocument(content: unknown, source: Source): Desired {
  const parsed = parseFields(content, source);
  return { ...parsed, label: `${parsed.type} "${parsed.key}"` };
}

function parseFields(content: unknown, source: Source): Desired {
  if (typeof content !== 'object' || content === null || Array.isArray(content)) {
    throw new DocumentError(source, undefined, ['a document must be a mapping with a `type`']);
  }
  const { type: typeName, ...fields } = content as Record<string, unknown>;
  const type = typeof typeName === 'string' ? TYPE_SPELLINGS[typeName.toLowerCase()] : undefined;
  if (!type) {
    throw new DocumentError(source, undefined, [
      `type must be one of ${DOCUMENT_TYPES.join(', ')}${typeName === undefined ? '' : `, not ${JSON.stringify(typeName)}`}`,
    ]);
  }
  const named = fields.name ?? fields.slug ?? fields.identifier ?? fields.tag;
  const label = `${type}${typeof named === 'string' ? ` "${named}"` : ''}`;
  const fail = (problems: string[]): never => {
    throw new DocumentError(source, label, problems);
  };
  const envelope = Object.fromEntries(ENVELOPE_KEYS[type].map((key) => [key, fields[key]]));
  const bodyFields = Object.fromEntries(
    Object.entries(fields).filter(([key]) => !ENVELOPE_KEYS[type].includes(key)),
  );
  const common = { source, label };

  switch (type) {
    case 'JobAgent': {
      const body = parseWith(
        JobAgentBody,
        { ...bodyFields, type: envelope.agentType },
        fail,
        { type: 'agentType' },
        ['name', 'config', 'metadata'],
      );
      return { ...common, type, key: body.name, body };
    }
    case 'System': {
      const body = parseWith(SystemBody, bodyFields, fail);
      const slug = body.slug ?? slugify(body.name);
      return { ...common, type, key: slug, body: { ...body, slug } };
    }
    case 'Environment': {
      const body = parseWith(EnvironmentBody, bodyFields, fail);
      return { ...common, type, key: body.name, body, systems: systemsOf(envelope, fail) };
    }
    case 'Deployment': {
      const body = parseWith(DeploymentBody, bodyFields, fail);
      return {
        ...common,
        type,
        key: body.slug,
        body,
        systems: systemsOf(envelope, fail),
        variables: variablesOf(envelope.variables, fail),
      };
    }
    case 'Resource': {
      const identifier = envelope.identifier;
      if (typeof identifier !== 'string' || identifier.trim() === '')
        return fail(['identifier: a non-empty string is required']);
      const body = parseWith(UpsertResourceBody, bodyFields, fail);
      return { ...common, type, key: identifier, identifier, body };
    }
    case 'Policy': {
      const body = parseWith(PolicyBody, bodyFields, fail);
      return { ...common, type, key: body.name, body };
    }
    case 'DeploymentVersion': {
      const deployment = envelope.deployment;
      if (typeof deployment !== 'string' || deployment === '')
        return fail(['deployment: the slug of the version’s deployment is required']);
      const body = parseWith(CreateVersionBody, bodyFields, fail);
      return { ...common, type, key: `${deployment}@${body.tag}`, deployment, body };
    }
  }
}

/**
 * Parses with an API schema, refusing top-level keys the schema does not know before anything is
 * sent (in a file they are almost always typos; the API refuses unknown keys at any depth too).
 * `renamed` maps schema paths back to the file's names.
 */
function parseWith<S extends ZodType>(
  schema: S,
  input: Record<string, unknown>,
  fail: (problems: string[]) => never,
  renamed: Record<string, string> = {},
  known: string[] = inputKeys(schema),
): z.output<S> {
  const unknown = Object.keys(input).filter((key) => !known.includes(key) && !(key in renamed));
  const result = schema.safeParse(input);
  const problems = [
    ...unknown.map((key) => `${key}: unknown field`),
    ...(result.success
      ? []
      : result.error.issues.map((issue) => {
          const [first, ...rest] = issue.path.map(String);
          const fieldPath = [first === undefined ? undefined : (renamed[first] ?? first), ...rest]
            .filter((part) => part !== undefined)
            .join('.');
          return `${fieldPath || '(document)'}: ${issue.message}`;
        })),
  ];
  if (problems.length > 0) fail(problems);
  return (result as { data: z.output<S> }).data;
}

/** The input keys of an object schema, looking through refinements and transforms. */
function inputKeys(schema: ZodType): string[] {
  const def = (schema as unknown as { def: { type: string; shape?: object; in?: ZodType } }).def;
  if (def.type === 'object' && def.shape) return Object.keys(def.shape);
  if (def.type === 'pipe' && def.in) return inputKeys(def.in);
  throw new Error(`cannot list the fields of a ${def.type} schema`);
}

function systemsOf(envelope: Record<string, unknown>, fail: (problems: string[]) => never) {
  const { system, systems } = envelope;
  if (system !== undefined && systems !== undefined) fail(['give either system or systems, not both']);
  if (system === undefined && systems === undefined) return undefined;
  const list = system !== undefined ? [system] : systems;
  if (!Array.isArray(list) || !list.every((entry) => typeof entry === 'string' && entry !== '')) {
    return fail([
      `${system !== undefined ? 'system' : 'systems'}: name systems by name or slug (a string, or a list of them)`,
    ]);
  }
  return list as string[];
}

function variablesOf(given: unknown, fail: (problems: string[]) => never): DesiredVariable[] | undefined {
  if (given === undefined) return undefined;
  if (!Array.isArray(given)) return fail(['variables: a list of {key, default_value, values} is required']);
  const keys = new Set<string>();
  return given.map((entry: unknown, position) => {
    const prefixed = (problems: string[]) =>
      fail(problems.map((problem) => `variables.${position}.${problem}`));
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return prefixed(['a mapping']);
    const { values = [], ...fields } = entry as Record<string, unknown>;
    const body = parseWith(VariableBody, fields, prefixed);
    if (keys.has(body.key)) prefixed([`key: "${body.key}" appears twice`]);
    keys.add(body.key);
    if (!Array.isArray(values)) return prefixed(['values: a list is required']);
    return {
      body,
      values: values.map((value: unknown, index) =>
        parseWith(VariableValueBody, (value ?? {}) as Record<string, unknown>, (problems) =>
          prefixed(problems.map((problem) => `values.${index}.${problem}`)),
        ),
      ),
    };
  });
}

/** Two documents for the same record would fight each other on every apply. */
function duplicates(documents: Desired[]): DocumentError[] {
  const seen = new Map<string, Desired>();
  const errors: DocumentError[] = [];
  for (const document of documents) {
    const id = `${document.type}\u0000${document.key}`;
    const first = seen.get(id);
    if (first) {
      errors.push(
        new DocumentError(document.source, document.label, [
          `the same record as ${where(first.source)}; describe each record once`,
        ]),
      );
    } else {
      seen.set(id, document);
    }
  }
  return errors;
}
