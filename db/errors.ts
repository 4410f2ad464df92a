import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { ConflictError } from '../domain/errors';

/** Runs a write and turns a unique-constraint violation into a 409 with a message people understand. */
export async function conflictOnDuplicate<T>(write: () => Promise<T>, message: string): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw new ConflictError(message, 'duplicate');
    throw error;
  }
}
