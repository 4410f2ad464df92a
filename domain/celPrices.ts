/**
 * What evaluating each kind of CEL node costs, measured: `npm run bench -- celPrices` profiles
 * every operator, function and macro at several input sizes and fits, per node kind, a base price
 * and a price per unit of size (the sizes of the values its children returned plus the size of the
 * value it returns: characters, elements or entries; a scalar counts 1). One unit of cost is a
 * nanosecond on the machine that measured the table (2 cores, Node 20).
 *
 * Keys are operators (`==`, `.`, `[]`, …), functions as `name/arity` and methods as `.name/arity`
 * (`.getHours/1` is the zoned form, ~1,000 times the price of `.getHours/0`).
 */

export interface Price {
  /** Cost of visiting the node once. */
  base: number;
  /** Cost per unit of size of what the node reads and returns. */
  perUnit: number;
}

export const CEL_PRICES: Readonly<Record<string, Price>> = {
  '-': { base: 20, perUnit: 0 },
  '-_': { base: 20, perUnit: 0 },
  '!_': { base: 20, perUnit: 0 },
  '!=': { base: 20, perUnit: 0 },
  '?:': { base: 20, perUnit: 0 },
  '.': { base: 20, perUnit: 0 },
  '.all/2': { base: 112, perUnit: 5 },
  '.at/1': { base: 20, perUnit: 0 },
  '.bind/3': { base: 20, perUnit: 0 },
  '.contains/1': { base: 20, perUnit: 0 },
  '.endsWith/1': { base: 20, perUnit: 0 },
  '.exists_one/2': { base: 20, perUnit: 0 },
  '.exists/2': { base: 60, perUnit: 16.455 },
  '.filter/2': { base: 20, perUnit: 0 },
  '.getDate/0': { base: 20, perUnit: 0 },
  '.getDate/1': { base: 45668, perUnit: 0 },
  '.getDayOfMonth/0': { base: 20, perUnit: 0 },
  '.getDayOfMonth/1': { base: 149504, perUnit: 0 },
  '.getDayOfWeek/0': { base: 20, perUnit: 0 },
  '.getDayOfWeek/1': { base: 176895, perUnit: 0 },
  '.getDayOfYear/0': { base: 249, perUnit: 0 },
  '.getDayOfYear/1': { base: 179670, perUnit: 0 },
  '.getFullYear/0': { base: 20, perUnit: 0 },
  '.getFullYear/1': { base: 174670, perUnit: 0 },
  '.getHours/0': { base: 20, perUnit: 0 },
  '.getHours/1': { base: 173618, perUnit: 0 },
  '.getMilliseconds/0': { base: 20, perUnit: 0 },
  '.getMilliseconds/1': { base: 20, perUnit: 0 },
  '.getMinutes/0': { base: 20, perUnit: 0 },
  '.getMinutes/1': { base: 57208, perUnit: 0 },
  '.getMonth/0': { base: 20, perUnit: 0 },
  '.getMonth/1': { base: 47920, perUnit: 0 },
  '.getSeconds/0': { base: 20, perUnit: 0 },
  '.getSeconds/1': { base: 58651, perUnit: 0 },
  '.hex/0': { base: 121, perUnit: 0.241 },
  '.indexOf/1': { base: 20, perUnit: 0 },
  '.indexOf/2': { base: 20, perUnit: 0 },
  '.join/0': { base: 20, perUnit: 1.381 },
  '.join/1': { base: 20, perUnit: 2.194 },
  '.json/0': { base: 482, perUnit: 95.183 },
  '.lastIndexOf/1': { base: 20, perUnit: 0.26 },
  '.lastIndexOf/2': { base: 20, perUnit: 0 },
  '.lowerAscii/0': { base: 20, perUnit: 0.048 },
  '.map/2': { base: 20, perUnit: 0 },
  '.map/3': { base: 20, perUnit: 0 },
  '.size/0': { base: 20, perUnit: 4.227 },
  '.split/1': { base: 20, perUnit: 2 },
  '.split/2': { base: 20, perUnit: 4.46 },
  '.startsWith/1': { base: 20, perUnit: 0 },
  '.substring/1': { base: 20, perUnit: 0 },
  '.substring/2': { base: 20, perUnit: 0 },
  '.trim/0': { base: 20, perUnit: 0 },
  '.upperAscii/0': { base: 20, perUnit: 0.063 },
  '[]': { base: 20, perUnit: 0 },
  '*': { base: 20, perUnit: 0 },
  '/': { base: 20, perUnit: 0 },
  '&&': { base: 20, perUnit: 0 },
  '%': { base: 20, perUnit: 0 },
  '+': { base: 20, perUnit: 1.235 },
  '<': { base: 20, perUnit: 0 },
  '<=': { base: 20, perUnit: 0 },
  '==': { base: 20, perUnit: 0 },
  '>': { base: 20, perUnit: 0 },
  '>=': { base: 20, perUnit: 0 },
  '||': { base: 20, perUnit: 0 },
  accuPush: { base: 20, perUnit: 0 },
  accuValue: { base: 20, perUnit: 0 },
  'bool/1': { base: 20, perUnit: 0 },
  'bytes/1': { base: 272, perUnit: 0.137 },
  'double/1': { base: 20, perUnit: 0 },
  'duration/1': { base: 461, perUnit: 0 },
  'dyn/1': { base: 20, perUnit: 0 },
  'has/1': { base: 110, perUnit: 0 },
  id: { base: 20, perUnit: 0 },
  in: { base: 20, perUnit: 3.412 },
  'int/1': { base: 20, perUnit: 0 },
  list: { base: 20, perUnit: 0 },
  map: { base: 20, perUnit: 0 },
  'size/1': { base: 20, perUnit: 4.233 },
  'string/1': { base: 20, perUnit: 0 },
  'timestamp/1': { base: 20, perUnit: 10.567 },
  'type/1': { base: 20, perUnit: 0 },
  'uint/1': { base: 80, perUnit: 0 },
  value: { base: 20, perUnit: 0 },
};

/** For a node kind the table lacks: the dearest prices the table has, so nothing unmeasured is cheap. */
export const UNKNOWN_PRICE: Price = Object.values(CEL_PRICES).reduce<Price>(
  (worst, price) => ({
    base: Math.max(worst.base, price.base),
    perUnit: Math.max(worst.perUnit, price.perUnit),
  }),
  { base: 1000, perUnit: 10 },
);

export function priceOf(key: string): Price {
  return CEL_PRICES[key] ?? UNKNOWN_PRICE;
}
