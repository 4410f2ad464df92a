import type { RecordScope } from '../../domain/selectors';
import type { SqlFragment } from '../../db/sql';

/**
 * CEL list filters as SQL predicates, so the common shapes run in PostgreSQL on its indexes instead
 * of being read record by record (application/common.ts `listFiltered`). Translated: `==`, `!=`, `in`
 * over a list of strings and `startsWith`, `endsWith` and `contains` of a string, each between a record's plain string field or
 * one of its metadata values (`resource.metadata["k"]`, `resource.metadata.k`) and string literals,
 * combined with `&&`, `||` and `!`. Anything else answers `undefined`, and the list judges the
 * records with CEL itself. Values travel as parameters, never in the SQL's text.
 *
 * The predicate holds exactly for the records on which CEL's answer is `true`. CEL's errors (a
 * metadata key the record lacks) combine as SQL's NULL does: `&&` and `||` absorb an error when the
 * other side decides, `!` keeps it, and a filter that ends in an error does not match. So negations
 * are pushed down to the comparisons (De Morgan holds for both), where a negated comparison holds
 * only when the key is there and the comparison is false, as CEL's would be `true` only then. The
 * rest is then a combination without negation, where an error and `false` lead to the same answer.
 */

/** The plain string fields of each scope's records, as SQL over the record's own table. */
const FIELDS: Partial<Record<RecordScope, Record<string, string>>> = {
  resource: { kind: '"kind"', name: '"name"', identifier: '"identifier"', version: '"version"' },
  deployment: { name: '"name"', slug: '"slug"' },
  environment: { name: '"name"' },
  // A version without a name shows CEL an empty one (domain/selectors.ts `selectorContext.version`).
  version: { tag: '"tag"', name: `coalesce("name", '')`, status: '"status"' },
};

/**
 * CEL's string tests as SQL over a value (a field, or a metadata value with its key as its
 * parameter), taking the argument at each of their `arguments` placeholders: they compare code points
 * exactly, as CEL's do, and hold for an empty argument. No index serves `endsWith` and `contains`:
 * they read the workspace's rows in one statement, still with an exact count.
 */
const STRING_TESTS: Record<string, { sql: (value: string) => string; arguments: number }> = {
  startsWith: { sql: (value) => `starts_with(${value}, ?)`, arguments: 1 },
  endsWith: { sql: (value) => `right(${value}, char_length(?)) = ?`, arguments: 2 },
  contains: { sql: (value) => `strpos(${value}, ?) > 0`, arguments: 1 },
};

/** A node of cel-js's parsed tree. */
interface AstNode {
  op: string;
  args: unknown;
}

/** What a comparison reads of a record: a string field, or the value of a metadata key. */
type Operand = { field: string } | { metadataKey: string };

/** The filter as a predicate over the scope's table, or `undefined` when it has a shape not translated. */
export function celPredicate(scope: RecordScope, ast: unknown): SqlFragment | undefined {
  const fields = FIELDS[scope];
  if (!fields) return undefined;
  return new Translation(scope, fields).predicate(ast, false);
}

class Translation {
  constructor(
    private readonly scope: RecordScope,
    private readonly fields: Record<string, string>,
  ) {}

  /** The predicate of `node`, or of its negation when `negated`. */
  predicate(node: unknown, negated: boolean): SqlFragment | undefined {
    if (!isNode(node)) return undefined;
    switch (node.op) {
      case '!_':
        return this.predicate(node.args, !negated);
      case '&&':
      case '||':
        return this.junction(node, negated);
      case '==':
      case '!=':
        return this.comparison(node, negated);
      case 'in':
        return this.membership(node, negated);
      case 'rcall':
        return this.stringCall(node, negated);
      default:
        return undefined;
    }
  }

  private junction(node: AstNode, negated: boolean): SqlFragment | undefined {
    if (!Array.isArray(node.args) || node.args.length !== 2) return undefined;
    const left = this.predicate(node.args[0], negated);
    const right = left && this.predicate(node.args[1], negated);
    if (!left || !right) return undefined;
    const conjunction = (node.op === '&&') !== negated;
    return {
      sql: `(${left.sql} ${conjunction ? 'AND' : 'OR'} ${right.sql})`,
      params: [...left.params, ...right.params],
    };
  }

  private comparison(node: AstNode, negated: boolean): SqlFragment | undefined {
    if (!Array.isArray(node.args) || node.args.length !== 2) return undefined;
    const [first, second] = node.args as unknown[];
    const operand = this.operand(first) ?? this.operand(second);
    const value = stringLiteral(this.operand(first) ? second : first);
    if (!operand || value === undefined) return undefined;
    const equal = (node.op === '==') !== negated;
    if ('field' in operand) return { sql: `${operand.field} ${equal ? '=' : '<>'} ?`, params: [value] };
    return equal
      ? containment(operand.metadataKey, value)
      : { sql: `"metadata" ->> ? <> ?`, params: [operand.metadataKey, value] };
  }

  private membership(node: AstNode, negated: boolean): SqlFragment | undefined {
    if (!Array.isArray(node.args) || node.args.length !== 2) return undefined;
    const [first, list] = node.args as unknown[];
    const operand = this.operand(first);
    if (!operand || !isNode(list) || list.op !== 'list' || !Array.isArray(list.args)) return undefined;
    const values = list.args.map(stringLiteral);
    // `x in []` is left to CEL: on a missing key it is an error, not the `false` SQL would say.
    if (values.length === 0 || values.some((value) => value === undefined)) return undefined;
    const strings = values as string[];
    const placeholders = strings.map(() => '?').join(', ');
    if ('field' in operand) {
      return { sql: `${operand.field} ${negated ? 'NOT IN' : 'IN'} (${placeholders})`, params: strings };
    }
    if (negated) {
      // NULL when the key is missing, as CEL's error.
      return {
        sql: `"metadata" ->> ? NOT IN (${placeholders})`,
        params: [operand.metadataKey, ...strings],
      };
    }
    const each = strings.map((value) => containment(operand.metadataKey, value));
    return {
      sql: `(${each.map((one) => one.sql).join(' OR ')})`,
      params: each.flatMap((one) => one.params),
    };
  }

  private stringCall(node: AstNode, negated: boolean): SqlFragment | undefined {
    if (!Array.isArray(node.args) || node.args.length !== 3) return undefined;
    const [name, target, callArgs] = node.args as unknown[];
    const test =
      typeof name === 'string' && Object.hasOwn(STRING_TESTS, name) ? STRING_TESTS[name] : undefined;
    if (!test || !Array.isArray(callArgs) || callArgs.length !== 1) return undefined;
    const operand = this.operand(target);
    const argument = stringLiteral(callArgs[0]);
    if (!operand || argument === undefined) return undefined;
    const [value, params] =
      'field' in operand ? [operand.field, []] : [`"metadata" ->> ?`, [operand.metadataKey]];
    // On a missing key each test is NULL, and so is its negation, as CEL's error.
    return {
      sql: `${negated ? 'NOT ' : ''}${test.sql(value)}`,
      params: [...params, ...Array<string>(test.arguments).fill(argument)],
    };
  }

  /** A string field of the record (`resource.kind`) or a metadata value (`resource.metadata["k"]`). */
  private operand(node: unknown): Operand | undefined {
    if (!isNode(node)) return undefined;
    if (node.op === '.' && Array.isArray(node.args)) {
      const [target, name] = node.args as unknown[];
      if (typeof name !== 'string') return undefined;
      if (this.isRecord(target)) {
        const field = Object.hasOwn(this.fields, name) ? this.fields[name] : undefined;
        return field === undefined ? undefined : { field };
      }
      return this.isMetadata(target) && usableString(name) ? { metadataKey: name } : undefined;
    }
    if (node.op === '[]' && Array.isArray(node.args)) {
      const [target, key] = node.args as unknown[];
      const metadataKey = stringLiteral(key);
      return this.isMetadata(target) && metadataKey !== undefined ? { metadataKey } : undefined;
    }
    return undefined;
  }

  /** `resource` in a resource filter: the record itself. */
  private isRecord(node: unknown): boolean {
    return isNode(node) && node.op === 'id' && node.args === this.scope;
  }

  /** `resource.metadata`. */
  private isMetadata(node: unknown): boolean {
    if (!isNode(node) || node.op !== '.' || !Array.isArray(node.args)) return false;
    const [target, name] = node.args as unknown[];
    return name === 'metadata' && this.isRecord(target);
  }
}

/** Records whose metadata holds `key` with this value: `@>`, which the metadata's GIN index answers. */
function containment(key: string, value: string): SqlFragment {
  return { sql: `"metadata" @> ?::jsonb`, params: [JSON.stringify({ [key]: value })] };
}

function isNode(node: unknown): node is AstNode {
  return typeof node === 'object' && node !== null && typeof (node as AstNode).op === 'string';
}

/** A string literal's value, when PostgreSQL can hold it. */
function stringLiteral(node: unknown): string | undefined {
  if (!isNode(node) || node.op !== 'value' || typeof node.args !== 'string') return undefined;
  return usableString(node.args) ? node.args : undefined;
}

/**
 * Whether PostgreSQL's text can hold this string: not with a NUL (`"\u0000"` in CEL), which no stored
 * value holds, as CEL would find, but which SQL would refuse with an error.
 */
function usableString(value: string): boolean {
  return !value.includes('\u0000');
}
