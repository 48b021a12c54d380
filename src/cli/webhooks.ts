/**
 * `seckill webhooks <action>`: the admin API's webhook endpoints from the command line, on
 * PostgreSQL directly (deliveries start from a running worker): add (prints the `whsec_` secret,
 * once), list, disable, enable, rotate, replay, dead-letters, retry (what waits, now). Each
 * answer is one JSON document; each change is recorded in the audit log (via cli, the OS user,
 * --operator).
 */
import { userInfo } from 'node:os';
import { decodeCursor } from '../events/index.js';
import type { AuditActor } from '../services/index.js';
import { withCore } from './commands.js';
import { ExitError } from './output.js';

export const WEBHOOK_ACTIONS = [
  'add',
  'list',
  'disable',
  'enable',
  'rotate',
  'replay',
  'dead-letters',
  'retry',
] as const;

interface WebhookValues {
  url?: string;
  events?: string;
  id?: string;
  from?: string;
  operator?: string;
}

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

function need(values: WebhookValues, flag: 'url' | 'id' | 'from', action: string): string {
  const value = values[flag];
  if (!value) throw new ExitError(`webhooks ${action}: --${flag} is required`, 2);
  return value;
}

export async function webhooks(action: string, values: WebhookValues): Promise<void> {
  if (!(WEBHOOK_ACTIONS as readonly string[]).includes(action)) {
    throw new ExitError(`webhooks: unknown action "${action}" (${WEBHOOK_ACTIONS.join(', ')})`, 2);
  }
  const from = action === 'replay' ? decodeCursor(need(values, 'from', action)) : undefined;
  if (action === 'replay' && !from) {
    throw new ExitError('webhooks replay: --from must be a cursor (GET /admin/events)', 2);
  }
  const url = action === 'add' ? need(values, 'url', action) : undefined;
  const id = ['add', 'list'].includes(action) ? undefined : need(values, 'id', action);
  if (values.operator !== undefined && !/^[\p{L}\p{N} ._@-]{1,64}$/u.test(values.operator)) {
    throw new ExitError('webhooks: --operator is 1-64 letters, digits, spaces and . _ @ -', 2);
  }
  const user = userInfo().username;
  const actor: AuditActor = { via: 'cli', session: user, operator: values.operator ?? user };
  await withCore(['postgres'], async ({ webhooks: endpoints }) => {
    const found = <T>(value: T | undefined): T => {
      if (value === undefined) throw new ExitError(`no webhook endpoint ${id}`, 1);
      return value;
    };
    switch (action) {
      case 'add': {
        const types = (values.events ?? '*').split(',').map((t) => t.trim());
        const r = await endpoints.register(url!, types, actor);
        if (r.code === 'refused') throw new ExitError(`webhooks add: --url ${r.reason}`, 2);
        return print(r.endpoint);
      }
      case 'list':
        return print(await endpoints.list());
      case 'disable':
      case 'enable':
        return print(
          found(await endpoints.setStatus(id!, action === 'enable' ? 'active' : 'disabled', actor)),
        );
      case 'rotate':
        return print(found(await endpoints.rotate(id!, actor)));
      case 'replay':
        return print(found(await endpoints.replay(id!, from!, actor)));
      case 'retry': {
        const r = found(await endpoints.retry(id!, actor));
        if (r.code === 'disabled') {
          throw new ExitError(
            `webhooks retry: ${id} is disabled (enable it: what waited is sent)`,
            1,
          );
        }
        return print({ lanes: r.lanes });
      }
      default:
        return print(found(await endpoints.deadLetters(id!, 1_000)));
    }
  });
}
