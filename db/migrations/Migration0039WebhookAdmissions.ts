import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook deliveries started per workspace and minute (db/webhookAdmissions.ts): one row per delivery
 * started, kept for a minute; the relay counts a workspace's rows of the last minute before it starts
 * more. No foreign key: a workspace's rows outlive it by a minute at most. The relay finds the
 * workspaces with deliveries waiting, and each one's oldest, through the outbox index below.
 */
export class Migration0039WebhookAdmissions extends Migration {
  override up(): void {
    this.addSql(
      `CREATE TABLE webhook_admission (
         workspace_id uuid NOT NULL,
         admitted_at timestamptz NOT NULL
       )`,
    );
    this.addSql(
      'CREATE INDEX webhook_admission_workspace_idx ON webhook_admission (workspace_id, admitted_at)',
    );
    this.addSql('CREATE INDEX webhook_admission_age_idx ON webhook_admission (admitted_at)');
    this.addSql(
      `CREATE INDEX outbox_webhook_deliveries_idx ON outbox ((payload->>'workspaceId'), id) WHERE kind = 'webhook.deliver'`,
    );
  }
}
