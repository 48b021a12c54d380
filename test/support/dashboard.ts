/**
 * The dashboard as a person reads it, for the browser tests: the login, each heat-map cell's
 * title, and the figures the page should show for a product as GET /admin/products/:id has it,
 * written the way the page writes them (thousands separators, "1.6 s").
 */
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

export interface AdminSegment {
  segment: number;
  stock: number;
  sold: number;
  returned: number;
  shard?: string;
}

export interface AdminProduct {
  remaining: number;
  sold: number;
  segments: AdminSegment[];
}

const nf = new Intl.NumberFormat('en-US');
export const fmt = (n: number) => nf.format(n);

/** What a heat-map cell's title says of a segment. */
export const cellTitle = (s: AdminSegment) =>
  `segment ${s.segment}: ${fmt(s.stock)} of ${fmt(s.stock + s.sold - s.returned)} left, ${fmt(
    s.sold,
  )} sold${s.shard ? ` · shard ${s.shard}` : ''}`;

/** A sale's length as the page writes it. */
export function took(ms: number): string {
  if (ms < 10_000) return `${(ms / 1_000).toFixed(1)} s`;
  const t = Math.round(ms / 1_000);
  const two = (n: number) => String(n).padStart(2, '0');
  const [h, m, s] = [Math.floor(t / 3600), Math.floor((t % 3600) / 60), t % 60];
  if (h > 0) return `${h} h ${two(m)} min ${two(s)} s`;
  return m > 0 ? `${m} min ${two(s)} s` : `${s} s`;
}

export async function logIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/admin/dashboard`);
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('#logout', { timeout: 15_000 });
}

export const cellTitles = (page: Page, productId: string) =>
  page.$$eval(`[data-testid=heat-${productId}] i`, (cells) =>
    cells.map((c) => (c as unknown as { title: string }).title),
  );

export const text = async (page: Page, testId: string) =>
  (await page.textContent(`[data-testid="${testId}"]`)) ?? '';

/** Waits until the page shows exactly what the admin API says of the product. */
export async function expectShows(page: Page, productId: string, p: AdminProduct): Promise<void> {
  await expect
    .poll(() => text(page, `remaining-${productId}`), { timeout: 15_000 })
    .toBe(fmt(p.remaining));
  expect(await text(page, `sold-${productId}`)).toBe(fmt(p.sold));
  await expect
    .poll(() => cellTitles(page, productId), { timeout: 15_000 })
    .toEqual(p.segments.map(cellTitle));
}

/** The refusal totals of the page's table, by kind (and `accepted`). */
export async function totals(page: Page): Promise<Record<string, number>> {
  await page.waitForSelector('[data-testid=total-accepted]:not(:empty)', { timeout: 15_000 });
  return page.$$eval('[data-testid^=total-]', (cells) =>
    Object.fromEntries(
      cells.map((c) => [
        c.getAttribute('data-testid')!.slice('total-'.length),
        Number(c.textContent!.replaceAll(',', '')),
      ]),
    ),
  );
}
