/**
 * A worker's start-up writes to Redis wait out an outage for a bound, then give up (the
 * supervisor starts a fresh process); other errors are not retried.
 */
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { whenRedisAnswers } from '../../src/composition/when-redis-answers.js';
import { Lifecycle } from '../../src/lifecycle.js';

const logger = pino({ level: 'silent' });

describe('whenRedisAnswers', () => {
  it('tries again while the error is an outage, and returns what the write returns', async () => {
    let calls = 0;
    const out = await whenRedisAnswers({ lifecycle: new Lifecycle(logger), logger }, 'x', () => {
      calls++;
      if (calls < 3) return Promise.reject(new Error('Connection is closed.'));
      return Promise.resolve('done');
    });
    expect(out).toBe('done');
    expect(calls).toBe(3);
  });

  it('does not retry an error that is not an outage', async () => {
    let calls = 0;
    await expect(
      whenRedisAnswers({ lifecycle: new Lifecycle(logger), logger }, 'x', () => {
        calls++;
        return Promise.reject(new Error('ERR syntax error'));
      }),
    ).rejects.toThrow('ERR syntax error');
    expect(calls).toBe(1);
  });

  it('gives up once shutdown has begun, and after its bound', async () => {
    const closing = new Lifecycle(logger);
    void closing.close();
    await expect(
      whenRedisAnswers({ lifecycle: closing, logger }, 'x', () =>
        Promise.reject(new Error('Connection is closed.')),
      ),
    ).rejects.toThrow('Connection is closed.');

    vi.useFakeTimers({ toFake: ['Date', 'setTimeout'] });
    try {
      let calls = 0;
      const p = whenRedisAnswers({ lifecycle: new Lifecycle(logger), logger }, 'x', () => {
        calls++;
        return Promise.reject(new Error('Connection is closed.'));
      });
      const settled = p.then(
        () => 'resolved',
        (e: Error) => e.message,
      );
      await vi.advanceTimersByTimeAsync(31_000);
      expect(await settled).toBe('Connection is closed.');
      expect(calls).toBeGreaterThanOrEqual(60);
      expect(calls).toBeLessThanOrEqual(64);
    } finally {
      vi.useRealTimers();
    }
  });
});
