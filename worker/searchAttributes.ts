import type { NativeConnection } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { searchAttributes } from '../workflows/searchAttributes';

/**
 * Registers our search attributes on a namespace that lacks them (an external cluster; the
 * embedded dev server gets them as start-up flags). Registration is idempotent.
 */
export async function ensureSearchAttributes(
  connection: Pick<NativeConnection, 'operatorService'>,
  namespace: string,
): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set([
    ...Object.keys(existing.customAttributes ?? {}),
    ...Object.keys(existing.systemAttributes ?? {}),
  ]);
  const missing: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const key of Object.values(searchAttributes)) {
    if (known.has(key.name)) continue;
    missing[key.name] =
      key.type === 'KEYWORD_LIST'
        ? temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST
        : temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  }
  if (Object.keys(missing).length > 0) {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
  }
  return Object.keys(missing);
}
