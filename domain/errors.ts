/**
 * Typed failures shared by every layer. The HTTP layer maps them to problem+json in one place
 * (api/middleware/problem.ts); nothing else decides status codes.
 */

export interface FieldIssue {
  /** JSON path of the offending field, e.g. `body.jobAgents[0].ref`. */
  path: string;
  message: string;
}

export abstract class FlightdeckError extends Error {
  abstract readonly code: string;

  constructor(
    message: string,
    readonly issues: FieldIssue[] = [],
    /** What a client reads besides the message, where Ctrlplane documents it (e.g. the slug that collided). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The request is malformed or fails validation (or, with its own code, what it asks is refused). */
export class ValidationError extends FlightdeckError {
  readonly code: string;

  constructor(message: string, issues: FieldIssue[] = [], code = 'validation_failed') {
    super(message, issues);
    this.code = code;
  }
}

/** No credentials, or credentials that match nothing. */
export class UnauthenticatedError extends FlightdeckError {
  readonly code = 'unauthenticated';
}

/** Authenticated, but this caller may not do this (e.g. an agent-scoped key on another agent). */
export class ForbiddenError extends FlightdeckError {
  readonly code: string;

  constructor(message: string, code = 'forbidden') {
    super(message);
    this.code = code;
  }
}

/** Unknown id, or an id that belongs to another workspace: both answer the same. */
export class NotFoundError extends FlightdeckError {
  readonly code = 'not_found';

  constructor(kind: string, id: string) {
    super(`${kind} ${id} was not found`);
  }
}

/** The request is valid but conflicts with the current state (duplicates, illegal moves, lost races). */
export class ConflictError extends FlightdeckError {
  readonly code: string;

  constructor(
    message: string,
    code = 'conflict',
    issues: FieldIssue[] = [],
    details?: Record<string, unknown>,
  ) {
    super(message, issues, details);
    this.code = code;
  }
}

/**
 * Well-formed, but what it asks would cost more than a request may spend (422): a CEL filter
 * stopped by its budget. Nothing was changed; a cheaper request can succeed.
 */
export class OverBudgetError extends FlightdeckError {
  readonly code = 'over_budget';
}

/**
 * The caller asked for more of something than it may have per unit of time (429); nothing was
 * changed, and the same request can succeed after `retryAfterSeconds`.
 */
export class RateLimitedError extends FlightdeckError {
  readonly code = 'rate_limited';

  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** A capability the request needs is not available on this server now (503); nothing was changed. */
export class UnavailableError extends FlightdeckError {
  readonly code = 'unavailable';
}
