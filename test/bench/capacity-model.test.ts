import { describe, expect, it } from 'vitest';
import { capacityModel } from '../../load-tests/bench/capacity.js';

describe('the capacity model of a flash crowd', () => {
  it('adds each tier’s cost of sales and of refusals and names the tier needing most instances', () => {
    const { rows, bottleneck } = capacityModel(
      {
        API: { usPerSale: 300, usPerRefusal: 60 },
        Redis: { usPerSale: 90, usPerRefusal: 0 },
      },
      { rate: 1_000_000, refusalShare: 0.99, utilisation: 0.7 },
    );
    // API: 10 000 sales x 300 us + 990 000 refusals x 60 us = 3 + 59.4 = 62.4 cores -> 90 at 70 %
    expect(rows[0]).toMatchObject({ tier: 'API', cores: 62.4, instances: 90 });
    // Redis: 10 000 x 90 us = 0.9 core -> 2
    expect(rows[1]).toMatchObject({ tier: 'Redis', cores: 0.9, instances: 2 });
    expect(bottleneck).toBe('API');
  });

  it('moves the bottleneck when refusals cost nothing', () => {
    const { bottleneck } = capacityModel(
      { API: { usPerSale: 50, usPerRefusal: 0 }, Redis: { usPerSale: 90, usPerRefusal: 0 } },
      { rate: 1_000_000, refusalShare: 0.99, utilisation: 0.7 },
    );
    expect(bottleneck).toBe('Redis');
  });
});
