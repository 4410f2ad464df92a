import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { AuditOrigin } from '../db/audit';
import type { Stores } from '../application';
import type { Principal } from '../domain/principal';

/** What every request carries through the middleware and its route (api/route.ts, api/middleware/). */
export interface AppState {
  requestId: string;
  log: Logger;
  stores: Stores;
  principal?: Principal;
  /** Who the request acts as, shared with its stores: the system until the caller is known. */
  origin: AuditOrigin;
}

export type AppContext = ParameterizedContext<AppState>;

export type AuthKind = 'none' | 'apiKey' | 'admin';
