import { storeOutage } from '../outages.js';
import type { Core } from './core.js';

/**
 * A start-up write to Redis, tried again for a while when Redis is away: a worker started while a
 * master fails over or its link is cut waits for it. Past STARTUP_REDIS_WAIT_MS it exits: a
 * client can stay "Connection is closed." long after Redis has healed, where a fresh process,
 * started by the supervisor, connects at once.
 */
export async function whenRedisAnswers(
  core: Pick<Core, 'lifecycle' | 'logger'>,
  what: string,
  write: () => Promise<unknown>,
): Promise<unknown> {
  const deadline = Date.now() + STARTUP_REDIS_WAIT_MS;
  for (let tries = 0; ; tries++) {
    try {
      return await write();
    } catch (err) {
      const outage = storeOutage(err);
      if (!outage || core.lifecycle.isClosing || Date.now() > deadline) throw err;
      if (tries % 20 === 0)
        core.logger.warn({ err: outage, tries }, `${what}: Redis does not answer; trying again`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

const STARTUP_REDIS_WAIT_MS = 30_000;
