import { describe, expect, it } from 'vitest';
import { saleVerdict, soldOutVerdict, unexpectedAnswers } from '../../load-tests/peer/verdicts.js';

const sale = {
  scenario: 'peer in stock',
  accepted: 1_000,
  sold: 1_030,
  rows: 1_030,
  inFlightMax: 100,
  unexpected: 0,
  errors: 0,
  storesAgree: true,
  storesNote: 'stock 8970 + sold 1030',
};

describe('the exactness checks of the peer comparison', () => {
  it('counts every answer of another status than the scenario counts', () => {
    expect(unexpectedAnswers({ '201': 10, '410': 2, '429': 3, '500': 1 }, ['201'])).toBe(6);
    expect(unexpectedAnswers({ '409': 7 }, ['409'])).toBe(0);
  });

  it('passes a sale whose units all have one order row, cut-off answers within the connections', () => {
    const v = saleVerdict(sale);
    expect(v.ok).toBe(true);
    expect(v.line).toContain('accepted 1000 (+30 cut off in flight)');
  });

  it('fails a sale that lost an order row, answered more sales than it sold, or cut off too many', () => {
    expect(saleVerdict({ ...sale, rows: 1_029 }).ok).toBe(false);
    expect(saleVerdict({ ...sale, rows: 1_031 }).ok).toBe(false);
    expect(saleVerdict({ ...sale, accepted: 1_031 }).ok).toBe(false);
    expect(saleVerdict({ ...sale, accepted: 900 }).ok).toBe(false);
    expect(saleVerdict({ ...sale, unexpected: 1 }).ok).toBe(false);
    expect(saleVerdict({ ...sale, errors: 1 }).ok).toBe(false);
    expect(saleVerdict({ ...sale, storesAgree: false }).line).toContain('VIOLATED');
  });

  it('passes a sold-out scenario only when every answer refused and nothing was sold or written', () => {
    const soldOut = {
      scenario: 'peer sold out',
      requests: 5_000,
      refusals: 5_000,
      soldDuring: 0,
      rowsAdded: 0,
      errors: 0,
      storesAgree: true,
      storesNote: '',
    };
    expect(soldOutVerdict(soldOut).ok).toBe(true);
    expect(soldOutVerdict({ ...soldOut, refusals: 4_999 }).ok).toBe(false);
    expect(soldOutVerdict({ ...soldOut, soldDuring: 1 }).ok).toBe(false);
    expect(soldOutVerdict({ ...soldOut, rowsAdded: 1 }).ok).toBe(false);
    expect(soldOutVerdict({ ...soldOut, storesAgree: false }).ok).toBe(false);
  });
});
