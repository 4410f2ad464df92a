const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a string is a UUID: checked before it reaches a uuid column, where anything else is a SQL error. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
