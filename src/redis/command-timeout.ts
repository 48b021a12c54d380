/**
 * The command connection's timeout, judged on Redis's silence rather than on this process's: see
 * {@link timeOutCommands}.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';

/** What the command timeout reads and sets on an ioredis Command (test/redis/ioredis-internals.test.ts). */
interface TimedCommand {
  /** true once resolved or rejected */
  isSettled: boolean;
  reject(err: Error): void;
  /** ioredis's own timeout's slot: the command clears the timer in it when it settles */
  _commandTimeoutTimer?: NodeJS.Timeout | undefined;
}

/**
 * The timeout of a command connection (`commandTimeoutMs` in connection.ts), kept here rather
 * than by ioredis: a command whose reply has not been read `timeoutMs` after it left fails
 * ('Command timed out'), and its connection, in doubt (stalled, or its reply lost, after which
 * every later reply would be matched to the wrong command), is dropped and reconnected, once per
 * connection, so later commands neither queue behind it nor get another's reply. Commands in
 * flight on it fail (their callers treat that as an unknown outcome, as they do the timeout).
 *
 * It times Redis, not this process: the clock starts in the check phase of the turn that sent the
 * command, where the turn's write leaves (coalesceWrites), and the verdict waits for the check
 * phase after the timer, so a reply that came while the event loop was busy is read (poll phase)
 * before it is judged missing.
 */
export function timeOutCommands(
  redis: Redis,
  opts: { name: string; logger?: Logger | undefined; timeoutMs: number },
  /** false: a cluster node's connection, which the cluster client replaces itself */
  reconnect: boolean,
): void {
  const ms = opts.timeoutMs;
  let generation = 0;
  let recycled = -1;
  redis.on('connect', () => generation++);
  const expire = (command: TimedCommand, sentOn: number) => {
    if (command.isSettled) return;
    command.reject(new Error('Command timed out'));
    if (sentOn !== generation || recycled === sentOn) return; // that connection is gone already
    recycled = sentOn;
    opts.logger?.warn({ redis: opts.name }, 'a command timed out: reconnecting');
    // a cluster node's connection is replaced by the cluster client, not reconnected
    redis.disconnect(reconnect);
  };
  const due = (command: TimedCommand, sentOn: number) => setImmediate(expire, command, sentOn);
  /** the commands this turn sent, timed from the turn's write */
  let turn: TimedCommand[] = [];
  const startClocks = () => {
    const sent = turn;
    turn = [];
    for (const command of sent) {
      if (command.isSettled) continue;
      // sent again (an offline queue flushed at a reconnect, a redirection): timed from now
      clearTimeout(command._commandTimeoutTimer);
      command._commandTimeoutTimer = setTimeout(due, ms, command, generation);
    }
  };
  const send = redis.sendCommand;
  redis.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    if (turn.length === 0) setImmediate(startClocks);
    turn.push(args[0] as unknown as TimedCommand);
    return send.apply(this, args);
  } as Redis['sendCommand'];
}
