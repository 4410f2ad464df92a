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
  '-': { base: 256, perUnit: 0 },
  '-_': { base: 88, perUnit: 0 },
  '!_': { base: 74, perUnit: 0 },
  '!=': { base: 194, perUnit: 0 },
  '?:': { base: 121, perUnit: 0 },
  '.': { base: 201, perUnit: 0 },
  '.all/2': { base: 605, perUnit: 0 },
  '.at/1': { base: 403, perUnit: 0 },
  '.base64/0': { base: 376, perUnit: 0.08 },
  '.bind/3': { base: 209, perUnit: 0 },
  '.contains/1': { base: 463, perUnit: 0 },
  '.endsWith/1': { base: 323, perUnit: 0 },
  '.exists_one/2': { base: 504, perUnit: 0 },
  '.exists/2': { base: 444, perUnit: 0 },
  '.filter/2': { base: 498, perUnit: 0 },
  '.getDate/0': { base: 141, perUnit: 0 },
  '.getDate/1': { base: 29551, perUnit: 0 },
  '.getDayOfMonth/0': { base: 142, perUnit: 0 },
  '.getDayOfMonth/1': { base: 92616, perUnit: 0 },
  '.getDayOfWeek/0': { base: 141, perUnit: 0 },
  '.getDayOfWeek/1': { base: 105308, perUnit: 0 },
  '.getDayOfYear/0': { base: 403, perUnit: 0 },
  '.getDayOfYear/1': { base: 108488, perUnit: 0 },
  '.getFullYear/0': { base: 140, perUnit: 0 },
  '.getFullYear/1': { base: 106364, perUnit: 0 },
  '.getHours/0': { base: 148, perUnit: 0 },
  '.getHours/1': { base: 106668, perUnit: 0 },
  '.getMilliseconds/0': { base: 169, perUnit: 0 },
  '.getMilliseconds/1': { base: 174, perUnit: 0 },
  '.getMinutes/0': { base: 140, perUnit: 0 },
  '.getMinutes/1': { base: 108729, perUnit: 0 },
  '.getMonth/0': { base: 142, perUnit: 0 },
  '.getMonth/1': { base: 112337, perUnit: 0 },
  '.getSeconds/0': { base: 135, perUnit: 0 },
  '.getSeconds/1': { base: 110456, perUnit: 0 },
  '.hex/0': { base: 369, perUnit: 3.349 },
  '.indexOf/1': { base: 351, perUnit: 0 },
  '.indexOf/2': { base: 464, perUnit: 0 },
  '.join/0': { base: 194, perUnit: 1.389 },
  '.join/1': { base: 203, perUnit: 1.603 },
  '.json/0': { base: 638, perUnit: 34.118 },
  '.lastIndexOf/1': { base: 289, perUnit: 0.177 },
  '.lastIndexOf/2': { base: 370, perUnit: 0 },
  '.lowerAscii/0': { base: 221, perUnit: 0.033 },
  '.map/2': { base: 491, perUnit: 0 },
  '.map/3': { base: 497, perUnit: 0 },
  '.size/0': { base: 282, perUnit: 2.778 },
  '.split/1': { base: 289, perUnit: 1.365 },
  '.split/2': { base: 485, perUnit: 2.769 },
  '.startsWith/1': { base: 457, perUnit: 0 },
  '.string/0': { base: 310, perUnit: 0.087 },
  '.substring/1': { base: 209, perUnit: 0 },
  '.substring/2': { base: 262, perUnit: 0 },
  '.trim/0': { base: 142, perUnit: 0 },
  '.upperAscii/0': { base: 162, perUnit: 0.04 },
  '[]': { base: 223, perUnit: 0 },
  '*': { base: 148, perUnit: 0 },
  '/': { base: 128, perUnit: 0 },
  '&&': { base: 115, perUnit: 0 },
  '%': { base: 135, perUnit: 0 },
  '+': { base: 216, perUnit: 1.677 },
  '<': { base: 207, perUnit: 0 },
  '<=': { base: 168, perUnit: 0 },
  '==': { base: 121, perUnit: 0.466 },
  '>': { base: 135, perUnit: 0 },
  '>=': { base: 135, perUnit: 0 },
  '||': { base: 80, perUnit: 0 },
  accuPush: { base: 149, perUnit: 0 },
  accuValue: { base: 34, perUnit: 0 },
  'bool/1': { base: 94, perUnit: 0 },
  'bytes/1': { base: 416, perUnit: 0.088 },
  'double/1': { base: 182, perUnit: 0 },
  'duration/1': { base: 335, perUnit: 0 },
  'dyn/1': { base: 135, perUnit: 0 },
  'has/1': { base: 241, perUnit: 0.013 },
  id: { base: 67, perUnit: 0 },
  in: { base: 369, perUnit: 2.265 },
  'int/1': { base: 228, perUnit: 0 },
  list: { base: 87, perUnit: 0.003 },
  map: { base: 518, perUnit: 0.047 },
  'size/1': { base: 249, perUnit: 2.758 },
  'string/1': { base: 141, perUnit: 0.406 },
  'timestamp/1': { base: 154, perUnit: 10.764 },
  'type/1': { base: 147, perUnit: 0 },
  'uint/1': { base: 323, perUnit: 0 },
  value: { base: 40, perUnit: 0 },
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
