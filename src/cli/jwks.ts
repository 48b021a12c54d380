/**
 * `seckill jwks refresh`: every API process fetches the identity provider's keys again now (a
 * leaked key the provider withdrew stops working at once, not when each process's set expires).
 * It tells them over Redis and records the change in the audit log (via cli, the OS user,
 * --operator); it prints how many API processes heard it.
 */
import { userInfo } from 'node:os';
import { cliIdentityKeys } from '../composition/identity-keys.js';
import type { AuditActor } from '../services/index.js';
import { withCore } from './commands.js';
import { ExitError } from './output.js';

export async function jwks(action: string, values: { operator?: string }): Promise<void> {
  if (action !== 'refresh') throw new ExitError(`jwks: unknown action "${action}" (refresh)`, 2);
  if (values.operator !== undefined && !/^[\p{L}\p{N} ._@-]{1,64}$/u.test(values.operator)) {
    throw new ExitError('jwks: --operator is 1-64 letters, digits, spaces and . _ @ -', 2);
  }
  const user = userInfo().username;
  const actor: AuditActor = { via: 'cli', session: user, operator: values.operator ?? user };
  await withCore(['redis', 'postgres'], async (core) => {
    const done = await cliIdentityKeys(core).refresh(actor);
    process.stdout.write(`${JSON.stringify(done)}\n`);
    if (done.processes === 0) {
      process.stderr.write(
        'jwks refresh: no API process heard it (none running, or none with JWT_JWKS_URL)\n',
      );
    }
  });
}
