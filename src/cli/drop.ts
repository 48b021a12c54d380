/**
 * `seckill drop <product> <action>`: the drop's controls from the command line
 * (docs/operations.md#running-a-drop), on the stores directly, as the admin API runs them: pause,
 * resume, end, units --add N | --withdraw N, pace --admit-per-second N --max-active N. Each is
 * recorded in the audit log (via cli, the OS user, --operator); every API process hears it.
 */
import { userInfo } from 'node:os';
import { dropParts } from '../composition/drop.js';
import { DropRefusal } from '../inventory/index.js';
import type { AuditActor } from '../services/index.js';
import { withCore } from './commands.js';
import { DROP_ACTIONS } from './drop-options.js';
import { ExitError } from './output.js';

interface DropValues {
  add?: string;
  withdraw?: string;
  'admit-per-second'?: string;
  'max-active'?: string;
  operator?: string;
  json?: boolean;
}

function count(values: DropValues, flag: keyof DropValues, max: number): number | undefined {
  const text = values[flag];
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(String(text)) || n < 1 || n > max) {
    throw new ExitError(`drop: --${flag} must be a whole number from 1 to ${max} (got ${text})`, 2);
  }
  return n;
}

export async function drop(productId: string, action: string, values: DropValues): Promise<void> {
  if (!(DROP_ACTIONS as readonly string[]).includes(action)) {
    throw new ExitError(`drop: unknown action "${action}" (${DROP_ACTIONS.join(', ')})`, 2);
  }
  const add = count(values, 'add', 1_000_000_000);
  const withdraw = count(values, 'withdraw', 1_000_000_000);
  const admitPerSecond = count(values, 'admit-per-second', 100_000);
  const maxActive = count(values, 'max-active', 1_000_000);
  if (action === 'units' && (add === undefined) === (withdraw === undefined)) {
    throw new ExitError('drop units: give one of --add N or --withdraw N', 2);
  }
  if (action === 'pace' && admitPerSecond === undefined && maxActive === undefined) {
    throw new ExitError('drop pace: give --admit-per-second N, --max-active N, or both', 2);
  }
  if (values.operator !== undefined && !/^[\p{L}\p{N} ._@-]{1,64}$/u.test(values.operator)) {
    throw new ExitError('drop: --operator is 1-64 letters, digits, spaces and . _ @ -', 2);
  }
  const user = userInfo().username;
  const actor: AuditActor = { via: 'cli', session: user, operator: values.operator ?? user };
  await withCore(['redis', 'postgres'], async (core) => {
    const { drop: controls } = dropParts(core);
    try {
      const done =
        action === 'units'
          ? await controls.units(productId, add ?? -withdraw!, actor)
          : action === 'pace'
            ? await controls.pace(productId, { admitPerSecond, maxActive }, actor)
            : await controls[action as 'pause' | 'resume' | 'end'](productId, actor);
      const state = await core.products.state(productId);
      const line = values.json
        ? JSON.stringify({ action, ...done, status: state?.status })
        : `${action} "${productId}" (epoch ${done.epoch}): ${done.changed ? 'done' : 'nothing to change'}; ` +
          `now ${state?.status}, ${state?.remaining} of ${state?.total} left`;
      process.stdout.write(`${line}\n`);
    } catch (err) {
      if (err instanceof DropRefusal) throw new ExitError(`drop ${action}: ${err.message}`, 1);
      throw err;
    }
  });
}
