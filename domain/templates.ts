import { parse } from 'yaml';
import { SEALED_MARKER_KEY } from './sensitive';

/**
 * Push-agent templates (Argo CD Applications, Terraform workspaces): a YAML or JSON document whose
 * string values may hold `{{ path }}` placeholders, looked up in the release context. Logic-less
 * and injection-safe: the document is parsed first and only its string values are filled in, so a
 * value can never add keys or change the structure. A placeholder is written as text (a number as
 * its digits, an object as JSON), so a string stays a string. An unknown path is an error that
 * names it.
 */

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

/** What a template's context holds in place of a sealed configuration value (see `templateContext`). */
const WITHHELD = Symbol('withheld');

export class TemplateError extends Error {}

function lookup(context: Record<string, unknown>, path: string): unknown {
  let value: unknown = context;
  for (const segment of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) {
      throw new TemplateError(`the template refers to {{ ${path} }}, which the context does not have`);
    }
    value = (value as Record<string, unknown>)[segment];
    if (value === WITHHELD) {
      throw new TemplateError(
        `the template refers to {{ ${path} }}, a sealed value: templates never render the configuration's secrets`,
      );
    }
  }
  return value;
}

/** Fills the placeholders of every string value of `node` (a parsed document) from `context`. */
export function fillTemplate(node: unknown, context: Record<string, unknown>): unknown {
  if (typeof node === 'string') {
    return node.replace(PLACEHOLDER, (_, path: string) => {
      const value = lookup(context, path);
      return typeof value === 'string' ? value : JSON.stringify(value);
    });
  }
  if (Array.isArray(node)) return node.map((item) => fillTemplate(item, context));
  if (node !== null && typeof node === 'object') {
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => [key, fillTemplate(value, context)]),
    );
  }
  return node;
}

/** The template's document with its placeholders filled in from `context`. */
export function renderTemplate(template: string, context: Record<string, unknown>): Record<string, unknown> {
  let document: unknown;
  try {
    document = parse(template);
  } catch (error) {
    throw new TemplateError(`the template is not valid YAML or JSON: ${(error as Error).message}`);
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new TemplateError('the template must be one YAML or JSON object');
  }
  return fillTemplate(document, context) as Record<string, unknown>;
}

/** A configuration with each sealed value (`{"$sealed": …}`) withheld. */
function withholdSealed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withholdSealed);
  if (value === null || typeof value !== 'object') return value;
  if (typeof (value as Record<string, unknown>)[SEALED_MARKER_KEY] === 'string') return WITHHELD;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withholdSealed(item)]));
}

/**
 * What templates may refer to, from a job's stored dispatch context: `job.id`, `release.id`,
 * `version.tag` / `.id` / `.config.*`, `deployment.name` / `.slug`, `environment.name`,
 * `resource.identifier` / `.name` / `.kind` / `.metadata.*` / `.config.*`, `variables.*` (sensitive
 * ones opened by `open`: delivering them to the agent's service is what they are for), and
 * `jobAgentConfig.*`, the merged configuration without its sealed values. A template may come from
 * a version or a deployment, written by anyone who may deploy; the agent's credentials are never
 * in its reach, so no template can carry them into a document (or a URL the service then fetches).
 */
export function templateContext(
  jobId: string,
  dispatchContext: Record<string, unknown>,
  open: (sealed: Record<string, unknown>) => Record<string, unknown>,
): Record<string, unknown> {
  const { jobAgentConfig, ...rest } = dispatchContext;
  return { ...open(rest), jobAgentConfig: withholdSealed(jobAgentConfig ?? {}), job: { id: jobId } };
}
