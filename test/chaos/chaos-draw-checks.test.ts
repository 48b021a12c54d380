/**
 * The chaos run's draw checks (load-tests/chaos/draw-checks.ts) on made-up histories: a run that
 * keeps both rules passes; a freeze at or after its round's time, an entry accepted after the
 * freeze, a rank passed over, a rank won past those offered and a purchase without a right are
 * each caught, naming the operation.
 */
import { describe, expect, it } from 'vitest';
import { checkDraw, type DrawTranscript } from '../../load-tests/chaos/draw-checks.js';
import type { DrawOp } from '../../load-tests/chaos/history.js';

const T0 = 1_800_000_000_000;
const chain = { genesis_time: 1_700_000_000, period: 3 };
/** round 33,334 is due at T0 + 2 s */
const ROUND = (T0 + 2_000 - chain.genesis_time * 1_000) / 3_000 + 1;
let nextOp = 0;

const transcript = (over: Partial<DrawTranscript> = {}): DrawTranscript => ({
  state: 'drawn',
  frozenAt: new Date(T0 + 1_000).toISOString(),
  round: ROUND,
  chain,
  winners: ['e1', 'e2'],
  waitlist: ['e3', 'e4', 'e5'],
  offered: 3,
  bought: ['e1', 'e3'],
  ...over,
});

const op = (kind: DrawOp['kind'], user: string, at: number, o: Partial<DrawOp> = {}): DrawOp => ({
  type: 'draw',
  op: nextOp++,
  kind,
  user,
  product: 'draw',
  invokeMs: at,
  completeMs: at + 5,
  status: kind === 'enter' ? 201 : 200,
  ...o,
});
const read = (user: string, at: number, entryId: string, state: DrawOp['state']) =>
  op('read', user, at, { entryId, state });

const good = (): DrawOp[] => [
  op('enter', 'u1', 100, { entryId: 'e1' }),
  op('enter', 'u3', 200, { entryId: 'e3' }),
  op('enter', 'late', 1_500, { status: 409 }),
  read('u3', 3_000, 'e3', 'waitlisted'),
  read('u1', 3_000, 'e1', 'won'),
  read('u2', 3_100, 'e2', 'won'),
  // rank 2's right runs out: rank 3 wins next
  read('u3', 9_000, 'e3', 'won'),
  read('u4', 9_500, 'e4', 'waitlisted'),
];

const check = (history: DrawOp[], t = transcript()) =>
  checkDraw(history, { product: 'draw', transcript: t, t0: T0 });

describe('the chaos run draw checks', () => {
  it('pass a run that keeps both rules', () => {
    expect(check(good()).map((r) => [r.name, r.ok])).toEqual([
      ['draw-frozen-before-beacon', true],
      ['draw-cascade-in-rank', true],
    ]);
  });

  it('catch a freeze at or after its round was due', () => {
    const [frozen] = check(good(), transcript({ frozenAt: new Date(T0 + 2_000).toISOString() }));
    expect(frozen).toMatchObject({ ok: false, counterExample: expect.stringMatching(/due at/) });
  });

  it('catch an entry accepted after the freeze', () => {
    const history = [...good(), op('enter', 'sneaky', 1_200, { entryId: 'e9' })];
    const [frozen] = check(history);
    expect(frozen).toMatchObject({ ok: false, counterExample: expect.stringMatching(/sneaky/) });
  });

  it('catch a rank passed over, a rank won past the offered, a purchase without a right', () => {
    const passed = [...good(), read('u2b', 9_600, 'e2', 'waitlisted')];
    expect(check(passed)[1]).toMatchObject({
      ok: false,
      counterExample: expect.stringMatching(/rank 2/),
    });
    const beyond = [...good(), read('u5', 9_700, 'e5', 'won')];
    expect(check(beyond)[1]).toMatchObject({
      ok: false,
      counterExample: expect.stringMatching(/rank 5 won/),
    });
    const stray = check(good(), transcript({ bought: ['e1', 'e4'] }));
    expect(stray[1]).toMatchObject({ ok: false, counterExample: 'e4 bought without a right' });
  });

  it('counts a rank sent back by a lagged master killed (default mode), not as broken', () => {
    const history = [...good(), read('u2b', 9_600, 'e2', 'waitlisted')];
    const [, cascade] = checkDraw(history, {
      product: 'draw',
      transcript: transcript(),
      t0: T0,
      rewindsAfter: [9_300],
    });
    expect(cascade).toMatchObject({ ok: true, rewound: 1 });
  });
});
