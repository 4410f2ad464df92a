import { setTimeout as sleep } from 'node:timers/promises';
import { Client as PgClient } from 'pg';
import type { Logger } from 'pino';

/** How long a lost listener waits before it connects again. */
const RECONNECT_MS = 1_000;

export interface ChannelListenerOptions {
  databaseUrl: string;
  channel: string;
  logger: Logger;
  /** Each notification's payload, in the order PostgreSQL delivers them. */
  onNotification(payload: string): void;
}

/**
 * A connection that LISTENs on one channel and connects again, every second, whenever it is lost
 * or could not be made: notifications sent meanwhile are lost, so its user also polls. NOTIFY is
 * transactional: a notification arrives once its transaction has committed.
 */
export class ChannelListener {
  private client?: PgClient;
  private running = false;
  /** Clients already given up: a failed connect may also emit `error`. */
  private readonly given = new WeakSet<PgClient>();

  constructor(private readonly options: ChannelListenerOptions) {}

  /** Connects and listens; resolves either way (a failed connect is retried in the background). */
  async start(): Promise<void> {
    this.running = true;
    await this.connect();
  }

  async stop(): Promise<void> {
    this.running = false;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const { channel, logger } = this.options;
    const client = new PgClient({ connectionString: this.options.databaseUrl });
    client.on('notification', (notification) => {
      if (notification.channel === channel) this.options.onNotification(notification.payload ?? '');
    });
    client.on('error', (error) => {
      logger.warn({ err: error, channel }, 'listener lost; connecting again');
      this.lost(client);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
      if (!this.running) {
        await client.end().catch(() => undefined);
        return;
      }
      this.client = client;
    } catch (error) {
      logger.warn({ err: error, channel }, 'listener could not connect; trying again');
      this.lost(client);
    }
  }

  private lost(client: PgClient): void {
    if (this.given.has(client)) return;
    this.given.add(client);
    void client.end().catch(() => undefined);
    if (this.client === client) this.client = undefined;
    if (this.running)
      void sleep(RECONNECT_MS).then(() => (this.running && !this.client ? this.connect() : undefined));
  }
}
