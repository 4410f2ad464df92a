import { z, type ZodType } from 'zod';

/**
 * Request bodies refuse what they do not declare, at every depth: a misspelled `sensitive` in a
 * variable must be a 400, not a value stored in the clear. Each route validates its body with a
 * copy of its schema in which every object that lists its keys is strict; zod then reports the
 * others as `unrecognized_keys`, which api/route.ts answers as `unknown field` at the key's full
 * path. The copy follows arrays, tuples, unions (zod picks the option as before), records' values,
 * optional, nullable and default wrappers, both sides of pipes (a transform's input, a preprocess's
 * output) and lazy schemas. What takes any key stays free-form: records keep any key (their values
 * are followed), and objects with a catch-all (`looseObject`, `catchall`) keep theirs. The schema
 * the OpenAPI document is generated from is not changed.
 */

type Def = { type: string } & Record<string, unknown>;

const strictCopies = new WeakMap<ZodType, ZodType>();

export function strictBody<T extends ZodType>(schema: T): T {
  let copy = strictCopies.get(schema);
  if (!copy) {
    copy = strictCopy(schema);
    strictCopies.set(schema, copy);
  }
  return copy as T;
}

function defOf(schema: ZodType): Def {
  return schema._zod.def as unknown as Def;
}

/** The schema rebuilt with some of its definition replaced; getters (defaults) stay getters. */
function withDef(schema: ZodType, changes: object): ZodType {
  const def = Object.defineProperties(
    {},
    {
      ...Object.getOwnPropertyDescriptors(schema._zod.def),
      ...Object.getOwnPropertyDescriptors(changes),
    },
  );
  return schema.clone(def as ZodType['_zod']['def']);
}

function strictCopy(schema: ZodType): ZodType {
  const def = defOf(schema);
  switch (def.type) {
    case 'object': {
      const catchall = def.catchall as ZodType | undefined;
      let shape: Record<string, ZodType> | undefined;
      return withDef(schema, {
        // Read when zod first needs it, so a shape that refers to itself is no endless loop.
        get shape() {
          shape ??= Object.fromEntries(
            Object.entries(defOf(schema).shape as Record<string, ZodType>).map(([key, value]) => [
              key,
              strictBody(value),
            ]),
          );
          return shape;
        },
        catchall: catchall ? strictBody(catchall) : z.never(),
      });
    }
    case 'array':
      return withDef(schema, { element: strictBody(def.element as ZodType) });
    case 'tuple':
      return withDef(schema, {
        items: (def.items as ZodType[]).map((item) => strictBody(item)),
        rest: def.rest ? strictBody(def.rest as ZodType) : def.rest,
      });
    case 'union':
      return withDef(schema, { options: (def.options as ZodType[]).map((option) => strictBody(option)) });
    case 'record':
      return withDef(schema, { valueType: strictBody(def.valueType as ZodType) });
    case 'pipe':
      return withDef(schema, { in: strictBody(def.in as ZodType), out: strictBody(def.out as ZodType) });
    case 'lazy':
      return withDef(schema, { getter: () => strictBody((def.getter as () => ZodType)()) });
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return withDef(schema, { innerType: strictBody(def.innerType as ZodType) });
    default:
      // Leaves, and intersections: each side of one must accept the other side's keys.
      return schema;
  }
}
