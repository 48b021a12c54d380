/**
 * `npm run bench:slots`: how a product's segments land on the masters of a Redis Cluster, with
 * plain `{P:i}` hash tags and with spread tags (src/redis/spread.ts), for N = 4, 16, 64 segments
 * over 3 masters holding even slot ranges (as `up` and `redis-cli --cluster create` split them),
 * over 2 000 random product ids. The busiest master bounds a hot sale: it serves that share of
 * the sale's traffic. Prints a table and one JSON line.
 *
 * Options: --products 2000 --masters 3
 */
import { parseArgs } from 'node:util';
import calculateSlot from 'cluster-key-slot';
import { spreadTag } from '../../src/redis/spread.js';
import { table } from './report.js';

const { values } = parseArgs({
  options: {
    products: { type: 'string', default: '2000' },
    masters: { type: 'string', default: '3' },
  },
});
const products = Number(values.products);
const masters = Number(values.masters);
const ownerOf = (slot: number) => Math.floor((slot * masters) / 16_384);

const rows: Array<Record<string, string | number>> = [];
for (const n of [4, 16, 64]) {
  for (const [name, tag] of [
    ['plain {P:i}', (p: string, i: number) => `${p}:${i}`],
    ['spread', spreadTag],
  ] as const) {
    let sumMax = 0;
    let worst = 0;
    for (let k = 0; k < products; k++) {
      const p = `p${k.toString(36)}x${(k * 7919).toString(36)}`;
      const per = new Array<number>(masters).fill(0);
      for (let i = 0; i < n; i++) per[ownerOf(calculateSlot(tag(p, i)))]!++;
      const max = Math.max(...per);
      sumMax += max;
      worst = Math.max(worst, max);
    }
    rows.push({
      segments: n,
      tags: name,
      'even share': Math.round((n / masters) * 100) / 100,
      'busiest master, mean': Math.round((sumMax / products) * 100) / 100,
      'busiest master, worst': worst,
      'busiest share, mean %': Math.round((sumMax / products / n) * 1000) / 10,
    });
  }
}
process.stdout.write(
  `\nSegments per master: ${products} product ids, ${masters} masters with even slot ranges\n\n${table(rows)}\n\n`,
);
process.stdout.write(`${JSON.stringify({ bench: 'slots', products, masters, results: rows })}\n`);
