/**
 * Malformed requests derived from our OpenAPI document: every case is wrong in at least one way the
 * document itself says is wrong (a missing required field, a value of another type, a string over
 * its maximum, an id that is not one, a number out of range), or in a way every JSON body is refused
 * (NUL, unpaired surrogates, nesting, invalid JSON). The API must answer each with a 4xx problem.
 * Besides, every object of every body gets a misspelled key in turn (`misspelledKeyCases`), and
 * every string field whose `pattern` refuses control characters gets each of them in turn
 * (`controlCharacterCases`).
 */

type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: Schema | boolean;
  enum?: unknown[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
  description?: string;
};

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  schema: Schema;
}

interface Operation {
  security?: Record<string, unknown>[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}

export interface FuzzCase {
  label: string;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Path and query string, already encoded. */
  path: string;
  /** A JSON value to send, or raw text with `raw`. */
  body?: unknown;
  raw?: string;
  /** Sent with the operator token: the operation asks for it. */
  admin?: boolean;
}

/** A body with one key no schema declares, at one of its objects: the answer must be 400 naming `field`. */
export interface MisspelledKeyCase extends FuzzCase {
  body: unknown;
  /** The misspelled key's path, as problem+json names it: `body.variables[0].sensitve`. */
  field: string;
}

/** A body with a control character in one string field its pattern refuses it in: 400 naming both. */
export interface ControlCharacterCase extends FuzzCase {
  body: unknown;
  /** The field's path, as problem+json names it: `body.reason`. */
  field: string;
  /** The character, as the refusal names it: `U+001B`. */
  codePoint: string;
}

/**
 * What a terminal or a text renderer acts on rather than shows: ESC, BEL, CR, DEL, a C1 control
 * (NEL), tab and line feed (a multi-line field's pattern takes those two), a bidirectional
 * override and an isolate.
 */
const CONTROL_CHARACTERS = ['\u001b', '\u0007', '\r', '\u007f', '\u0085', '\t', '\n', '\u202e', '\u2066'];

/** The keys of fields that hold text people read. */
const TEXT_KEY = /\.(name|slug|tag|reason|description|message|comment|title)$/;
/** A job agent's configuration is data, whatever its keys are called (a test runner's `message`). */
const IN_CONFIGURATION = /\.config\./;

const codePoint = (char: string) => `U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

/** Whether the document's `pattern` refuses control characters (an ESC) in the string. */
const refusesControls = (pattern: string | undefined) =>
  pattern !== undefined && !new RegExp(pattern).test('fuzz\u001bvalue');

/** A string field of a body: where it is, its schema, and the operation's body with a value there. */
interface BodyString {
  operation: string;
  method: FuzzCase['method'];
  path: string;
  admin: boolean;
  field: string;
  schema: Schema;
  bodyWith: (value: string) => unknown;
}

/** A key a little off one the object declares (`sensitive` → `sensitve`), or one it surely does not. */
function misspelling(declared: string[]): string {
  const name = [...declared].sort((a, b) => b.length - a.length)[0];
  if (!name) return 'unexpected';
  if (name.length < 4) return `${name}x`;
  const cut = name.length - 3;
  const typo = name.slice(0, cut) + name.slice(cut + 1);
  return declared.includes(typo) ? `${name}x` : typo;
}

/** Valid values for path parameters, by name: records the test created. */
export type KnownIds = Record<string, string>;

/** A CEL expression whose value doubles with each bind: 2^31 characters if it were evaluated. */
export const CEL_BIND_BOMB = (() => {
  let expression = 'v30.size() > 0';
  for (let i = 30; i >= 1; i--) expression = `cel.bind(v${i}, v${i - 1} + v${i - 1}, ${expression})`;
  return `cel.bind(v0, 'xx', ${expression})`;
})();

const CEL_CASES = [
  'resource.(',
  'resource.kind ==',
  CEL_BIND_BOMB,
  `${'('.repeat(600)}true${')'.repeat(600)}`,
  '[1,2,3,4,5,6,7,8].map(a, [1,2,3,4,5,6,7,8].map(b, [1,2,3,4,5,6,7,8].map(c, [1,2,3,4,5,6,7,8].map(d, [1,2,3,4,5,6,7,8].map(e, [1,2,3,4,5,6,7,8].map(f, a+b+c+d+e+f)))))).size() > 0',
  "resource.name.matches('(a+)+$')",
];

/** Wrong for any path parameter: NUL, percent-encoding that is not UTF-8, or not percent-encoding. */
const BAD_TEXT = ['%00', '%ED%A0%80', '%E0%A4%A'];
/** Wrong for an id: not a UUID. */
const BAD_IDS = [...BAD_TEXT, 'not-an-id', '1', '..%2F..%2Fsecrets', "'%20OR%20'1'%3D'1", 'x'.repeat(1500)];

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { n: value } : [value];
  return value;
}

export class OpenApiFuzzer {
  constructor(
    private readonly document: {
      paths: Record<string, Record<string, Operation>>;
      components?: { schemas?: Record<string, Schema> };
    },
    private readonly known: KnownIds,
  ) {}

  cases(): FuzzCase[] {
    const cases: FuzzCase[] = [];
    for (const [template, operations] of Object.entries(this.document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        cases.push(...this.operationCases(method as FuzzCase['method'], template, operation));
      }
    }
    return cases;
  }

  /**
   * For every object of every request body (following properties, array items, record values and
   * each option of a union), the body that reaches it with a misspelled key added there.
   */
  misspelledKeyCases(): MisspelledKeyCase[] {
    const cases: MisspelledKeyCase[] = [];
    for (const [template, operations] of Object.entries(this.document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const bodySchema = operation.requestBody?.content['application/json']?.schema;
        if (!bodySchema || !['post', 'put', 'patch', 'delete'].includes(method)) continue;
        for (const [field, body] of this.misspelled(bodySchema, 'body', [])) {
          cases.push({
            label: `${method.toUpperCase()} ${template}: ${field}`,
            method: method as FuzzCase['method'],
            path: this.pathOf(template),
            body,
            field,
            admin: (operation.security ?? []).some((scheme) => 'adminToken' in scheme),
          });
        }
      }
    }
    return cases;
  }

  /**
   * For every string field of every request body whose `pattern` takes a plain value but refuses it
   * with a control character in it, the body with that value there, for each such character.
   */
  controlCharacterCases(): ControlCharacterCase[] {
    const cases: ControlCharacterCase[] = [];
    for (const { operation, method, path, admin, field, schema, bodyWith } of this.bodyStrings()) {
      if (!schema.pattern) continue;
      const pattern = new RegExp(schema.pattern);
      if (!pattern.test('fuzz-value')) continue;
      for (const char of CONTROL_CHARACTERS) {
        const value = `fuzz${char}value`;
        if (pattern.test(value)) continue;
        const point = codePoint(char);
        cases.push({
          label: `${operation}: ${field} with ${point}`,
          method,
          path,
          body: bodyWith(value),
          field,
          codePoint: point,
          admin,
        });
      }
    }
    return cases;
  }

  /**
   * Fields of request bodies named as text people read (`name`, `reason`, …), outside
   * configurations, whose pattern takes control characters.
   */
  unguardedTextFields(): string[] {
    return this.bodyStrings()
      .filter(
        ({ field, schema }) =>
          TEXT_KEY.test(field) && !IN_CONFIGURATION.test(field) && !refusesControls(schema.pattern),
      )
      .map(({ operation, field }) => `${operation}: ${field}`);
  }

  private bodyStrings(): BodyString[] {
    const found: BodyString[] = [];
    for (const [template, operations] of Object.entries(this.document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const bodySchema = operation.requestBody?.content['application/json']?.schema;
        if (!bodySchema || !['post', 'put', 'patch', 'delete'].includes(method)) continue;
        for (const [field, schema, bodyWith] of this.strings(bodySchema, 'body', [])) {
          found.push({
            operation: `${method.toUpperCase()} ${template}`,
            method: method as FuzzCase['method'],
            path: this.pathOf(template),
            admin: (operation.security ?? []).some((scheme) => 'adminToken' in scheme),
            field,
            schema,
            bodyWith,
          });
        }
      }
    }
    return found;
  }

  /**
   * The free-text string fields of `raw` (not enums, formats such as uuid, or records' values),
   * following properties, array items and each option of a union: each with its path, its schema
   * and the value of `raw` that carries a given string there.
   */
  private *strings(
    raw: Schema,
    at: string,
    refs: readonly string[],
  ): Generator<[string, Schema, (value: string) => unknown]> {
    const ref = raw.$ref?.split('/').pop();
    if (ref && refs.includes(ref)) return;
    const within = ref ? [...refs, ref] : refs;
    const schema = this.resolve(raw);
    for (const option of [...(schema.oneOf ?? []), ...(schema.anyOf ?? [])]) {
      yield* this.strings(option, at, within);
    }
    if (this.types(schema).includes('string') && !schema.enum && !schema.format) {
      yield [at, schema, (value) => value];
    }
    const parts = [schema, ...(schema.allOf ?? []).map((part) => this.resolve(part))];
    const properties: Record<string, Schema> = Object.assign(
      {},
      ...parts.map((part) => part.properties ?? {}),
    );
    if (Object.keys(properties).length > 0) {
      const base = this.example(schema) as Record<string, unknown>;
      for (const [name, property] of Object.entries(properties)) {
        for (const [field, leaf, inner] of this.strings(property, `${at}.${name}`, within)) {
          yield [field, leaf, (value) => ({ ...base, [name]: inner(value) })];
        }
      }
    }
    if (schema.items) {
      for (const [field, leaf, inner] of this.strings(schema.items, `${at}[0]`, within)) {
        yield [field, leaf, (value) => [inner(value)]];
      }
    }
  }

  /** Values of `raw`, each with one misspelled key at one object in it, and that key's path. */
  private *misspelled(raw: Schema, at: string, refs: readonly string[]): Generator<[string, unknown]> {
    const ref = raw.$ref?.split('/').pop();
    if (ref && refs.includes(ref)) return;
    const within = ref ? [...refs, ref] : refs;
    const schema = this.resolve(raw);
    for (const option of [...(schema.oneOf ?? []), ...(schema.anyOf ?? [])]) {
      yield* this.misspelled(option, at, within);
    }
    const parts = [schema, ...(schema.allOf ?? []).map((part) => this.resolve(part))];
    const properties: Record<string, Schema> = Object.assign(
      {},
      ...parts.map((part) => part.properties ?? {}),
    );
    const open = parts.map((part) => part.additionalProperties).find((extra) => extra !== undefined);
    const isObject = parts.some((part) => this.types(part).includes('object') || part.properties);
    if (isObject && (open === undefined || open === false)) {
      const base = this.example(schema) as Record<string, unknown>;
      const key = misspelling(Object.keys(properties));
      yield [`${at}.${key}`, { ...base, [key]: 'misspelled' }];
      for (const [name, property] of Object.entries(properties)) {
        for (const [field, value] of this.misspelled(property, `${at}.${name}`, within)) {
          yield [field, { ...base, [name]: value }];
        }
      }
    } else if (isObject && typeof open === 'object') {
      // Any key goes in a record (an id, often): its values are what may be objects.
      const key = this.idFor('');
      for (const [field, value] of this.misspelled(open, `${at}.${key}`, within))
        yield [field, { [key]: value }];
    }
    if (schema.items) {
      for (const [field, value] of this.misspelled(schema.items, `${at}[0]`, within)) yield [field, [value]];
    }
  }

  /** The path with every parameter a known record's id (or name), or as `overrides` say. */
  private pathOf(template: string, overrides: Record<string, string> = {}): string {
    return template.replace(
      /\{(\w+)\}/g,
      (_, name: string) => overrides[name] ?? encodeURIComponent(this.idFor(name)),
    );
  }

  private operationCases(method: FuzzCase['method'], template: string, operation: Operation): FuzzCase[] {
    const params = operation.parameters ?? [];
    const pathParams = params.filter((p) => p.in === 'path');
    const queryParams = params.filter((p) => p.in === 'query');
    const bodySchema = operation.requestBody?.content['application/json']?.schema;
    const base = bodySchema ? this.example(bodySchema) : undefined;
    const path = (overrides: Record<string, string> = {}) => this.pathOf(template, overrides);
    const name = `${method.toUpperCase()} ${template}`;
    const cases: FuzzCase[] = [];

    for (const param of pathParams) {
      const schema = this.resolve(param.schema);
      const bad =
        schema.format === 'uuid' ? BAD_IDS : [...BAD_TEXT, 'y'.repeat((schema.maxLength ?? 2000) + 1)];
      for (const value of bad) {
        cases.push({
          label: `${name}: path ${param.name}=${value.slice(0, 20)}`,
          method,
          path: path({ [param.name]: value }),
          body: base,
        });
      }
    }

    for (const param of queryParams) {
      for (const value of this.badQueryValues(param)) {
        cases.push({
          label: `${name}: query ${param.name}=${value.slice(0, 30)}`,
          method,
          path: `${path()}?${value}`,
          body: base,
        });
      }
    }

    if (bodySchema) {
      for (const [label, body] of this.badBodies(this.resolve(bodySchema), base)) {
        cases.push({ label: `${name}: body ${label}`, method, path: path(), body });
      }
      for (const raw of ['{', '{"name": }', "{'name': 'x'}", '[1,]', 'nul', '"\\ud800"']) {
        cases.push({ label: `${name}: raw ${raw}`, method, path: path(), raw });
      }
    }
    return cases;
  }

  private idFor(name: string): string {
    return this.known[name] ?? '00000000-0000-7000-8000-00000000f022';
  }

  /** Encoded `name=value` pairs, each wrong for the parameter. */
  private badQueryValues(param: Parameter): string[] {
    const schema = this.resolve(param.schema);
    const values = ['%00', '%ED%A0%80', '%E0%A4%A', 'z'.repeat(5000)];
    if (param.name === 'cel') values.push(...CEL_CASES.map(encodeURIComponent));
    const type = this.types(schema);
    if (type.includes('integer') || type.includes('number')) {
      values.push('abc', '-1', '1.5', '1e309', '99999999999999999999', 'NaN', '0x10');
    } else if (schema.format === 'uuid') {
      values.push('not-a-uuid', '1', encodeURIComponent("' OR 1=1 --"));
    } else if (schema.enum) {
      values.push('no-such-value');
    }
    const pairs = values.map((value) => `${param.name}=${value}`);
    if (schema.enum || type.includes('integer')) pairs.push(`${param.name}=1&${param.name}=2`);
    return pairs;
  }

  /** A body the document would accept, as far as types go: required fields with plausible values. */
  private example(raw: Schema): unknown {
    const schema = this.resolve(raw);
    if (schema.oneOf?.[0]) return this.example(schema.oneOf[0]);
    if (schema.anyOf?.[0]) return this.example(schema.anyOf[0]);
    if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s) => this.example(s) as object));
    if (schema.enum) return schema.enum[0];
    const type = this.types(schema)[0];
    switch (type) {
      case 'object': {
        const value: Record<string, unknown> = {};
        for (const key of schema.required ?? [])
          value[key] = this.propertyExample(key, schema.properties?.[key] ?? {});
        return value;
      }
      case 'array':
        return schema.minItems && schema.items ? [this.example(schema.items)] : [];
      case 'integer':
      case 'number':
        return schema.minimum ?? 1;
      case 'boolean':
        return true;
      case 'string':
        return schema.format === 'uuid' ? this.idFor('') : 'fuzz-value';
      default:
        return null;
    }
  }

  private propertyExample(key: string, schema: Schema): unknown {
    const resolved = this.resolve(schema);
    if (resolved.format === 'uuid' && this.known[key]) return this.known[key];
    return this.example(schema);
  }

  /** Each property made wrong, one at a time, plus whole-body defects. */
  private *badBodies(schema: Schema, base: unknown): Generator<[string, unknown]> {
    for (const value of [[], 'text', 42, null, true]) yield [`is ${JSON.stringify(value)}`, value];
    const object = (base ?? {}) as Record<string, unknown>;
    if (typeof base !== 'object' || base === null || Array.isArray(base)) return;
    yield ['nested 200 levels in an extra field', { ...object, extra: nested(200) }];
    yield ['with a NUL key', { ...object, ['a\u0000b']: 1 }];
    yield ['over the body limit', { ...object, extra: 'b'.repeat(3_000_000) }];
    const variant = schema.oneOf?.[0] ?? schema.anyOf?.[0] ?? schema;
    const resolved = this.resolve(variant);
    for (const key of resolved.required ?? []) {
      const { [key]: _omitted, ...rest } = object;
      yield [`without required ${key}`, rest];
    }
    for (const [key, property] of Object.entries(resolved.properties ?? {})) {
      for (const [label, value] of this.badValues(key, this.resolve(property))) {
        yield [`${key} ${label}`, { ...object, [key]: value }];
      }
    }
  }

  private *badValues(key: string, schema: Schema): Generator<[string, unknown]> {
    const types = this.types(schema);
    if (types.length === 0) {
      yield ['nested 200 levels', nested(200)];
      return;
    }
    const nullable = types.includes('null');
    const wrong: unknown[] = [];
    if (!types.includes('string')) wrong.push('text');
    if (!types.includes('number') && !types.includes('integer')) wrong.push(7);
    if (!types.includes('boolean')) wrong.push(false);
    if (!types.includes('object')) wrong.push({ a: 1 });
    if (!types.includes('array')) wrong.push([1]);
    if (!nullable) wrong.push(null);
    for (const value of wrong) yield [`as ${JSON.stringify(value)}`, value];

    if (schema.enum) yield ['outside its enum', 'no-such-value'];
    if (types.includes('string') && !schema.enum) {
      yield ['with NUL', 'a\u0000b'];
      yield ['with a lone surrogate', 'a\uD800b'];
      if (schema.maxLength !== undefined) yield ['over its maximum length', 'x'.repeat(schema.maxLength + 1)];
      if (schema.format === 'uuid') yield ['not a uuid', 'not-a-uuid'];
      if (/selector|condition|cel/i.test(key) || /\bCEL\b/.test(schema.description ?? '')) {
        for (const expression of CEL_CASES) yield [`as CEL ${expression.slice(0, 25)}`, expression];
      }
    }
    if (types.includes('integer') || types.includes('number')) {
      if (types.includes('integer')) yield ['as 1.5', 1.5];
      if (schema.maximum !== undefined) yield ['over its maximum', schema.maximum + 1];
      if (schema.minimum !== undefined) yield ['under its minimum', schema.minimum - 1];
      yield ['as 1e308', 1e308];
    }
    if (types.includes('object')) {
      yield ['nested 200 levels', { n: nested(200) }];
      yield ['with a NUL key', { ['k\u0000']: 'v' }];
    }
    if (types.includes('array') && schema.maxItems !== undefined) {
      yield [
        'over its maximum items',
        Array.from({ length: schema.maxItems + 1 }, () => this.example(schema.items ?? {})),
      ];
    }
  }

  private types(schema: Schema): string[] {
    if (schema.type === undefined) return [];
    return Array.isArray(schema.type) ? schema.type : [schema.type];
  }

  private resolve(schema: Schema): Schema {
    if (!schema.$ref) return schema;
    const name = schema.$ref.split('/').pop()!;
    return this.resolve(this.document.components?.schemas?.[name] ?? {});
  }
}

/** Parts a recurrence rule is built of: ordinary ones, ones that never or hardly ever match, and wrong ones. */
const RECURRENCE_PARTS: readonly (readonly string[])[] = [
  [
    'FREQ=YEARLY',
    'FREQ=MONTHLY',
    'FREQ=WEEKLY',
    'FREQ=DAILY',
    'FREQ=HOURLY',
    'FREQ=MINUTELY',
    'FREQ=SECONDLY',
    'FREQ=NEVER',
  ],
  ['', 'INTERVAL=1', 'INTERVAL=7', 'INTERVAL=1000', 'INTERVAL=100000', 'INTERVAL=0', 'INTERVAL=-1'],
  ['', 'BYMONTH=2', 'BYMONTH=2,4,6', 'BYMONTH=13', 'BYMONTH=0'],
  [
    '',
    'BYMONTHDAY=31',
    'BYMONTHDAY=29',
    'BYMONTHDAY=30,31',
    'BYMONTHDAY=-1',
    'BYMONTHDAY=0',
    'BYMONTHDAY=32',
  ],
  ['', 'BYDAY=MO', 'BYDAY=MO,FR', 'BYDAY=1MO', 'BYDAY=-1FR', 'BYDAY=5SU', 'BYDAY=53MO', 'BYDAY=XX'],
  ['', 'BYHOUR=9', 'BYHOUR=0,12,23', 'BYHOUR=24'],
  ['', 'BYMINUTE=0', `BYMINUTE=${Array.from({ length: 60 }, (_, i) => i).join(',')}`],
  ['', 'BYSECOND=0', 'BYSECOND=0,15,30,45', 'BYSECOND=61'],
  ['', 'BYSETPOS=1', 'BYSETPOS=-1', 'BYSETPOS=366', 'BYSETPOS=400'],
  ['', 'BYYEARDAY=366', 'BYYEARDAY=-366', 'BYYEARDAY=60', 'BYYEARDAY=0'],
  ['', 'BYWEEKNO=53', 'BYWEEKNO=1'],
  ['', 'COUNT=1', 'COUNT=10000', 'COUNT=1000000000', 'UNTIL=20200101T000000Z', 'UNTIL=20991231T000000Z'],
  ['', 'WKST=SU', 'WKST=ZZ'],
];
const RECURRENCE_STARTS = [
  '',
  '19000101T000000Z',
  '19700101T000000Z',
  '19900101T000000Z',
  '20261201T090000',
  '20990101T000000Z',
  '99991231T235959Z',
  'garbage',
];

/**
 * Recurrence rules for a window or a freeze, drawn from the parts above with a fixed seed (so a
 * failure can be found again): the API must answer each with a 2xx or a 4xx problem, at once —
 * never a 5xx, never after searching centuries for a start.
 */
export function recurrenceRuleCases(count: number, seed = 45): string[] {
  let state = seed;
  const random = (n: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  return Array.from({ length: count }, () => {
    const parts = RECURRENCE_PARTS.map((choices) => choices[random(choices.length)]!).filter(Boolean);
    const start = RECURRENCE_STARTS[random(RECURRENCE_STARTS.length)]!;
    return start ? `DTSTART:${start}\nRRULE:${parts.join(';')}` : parts.join(';');
  });
}
