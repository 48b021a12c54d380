/**
 * Shoppers in a product's waiting room (docs/waiting-room.md), over plain HTTP: join, poll the
 * process they joined until admitted, buy with the sale token the admission carries.
 */
import { buy, type Answer } from './sale.js';
import { waitFor } from './wait.js';

export interface Place {
  state: 'waiting' | 'admitted' | 'sold-out' | 'ended';
  position: number | null;
  saleToken?: string;
}

async function place(url: string, method: string, productId: string, userId: string) {
  const res = await fetch(`${url}/products/${productId}/queue`, {
    method,
    headers: { 'x-user-id': userId },
  });
  if (res.status !== 200) throw new Error(`${method} queue of ${userId}: ${res.status}`);
  return (await res.json()) as Place;
}

export const join = (url: string, productId: string, userId: string) =>
  place(url, 'POST', productId, userId);

/** Polls (on the process the shopper joined: it times the wait) until admitted: the sale token. */
export async function admitted(
  url: string,
  productId: string,
  userId: string,
  timeoutMs = 30_000,
): Promise<string> {
  let last: Place | undefined;
  return waitFor(
    `${userId} admitted to ${productId}'s room`,
    async () => {
      last = await place(url, 'GET', productId, userId);
      return last.state === 'admitted' && last.saleToken;
    },
    timeoutMs,
    100,
    () => JSON.stringify(last),
  );
}

export interface Shopper {
  url: string;
  userId: string;
}

/** `n` shoppers joining `productId`'s room from the API processes in turn. */
export async function joinAll(
  urls: string[],
  productId: string,
  users: string,
  n: number,
): Promise<Shopper[]> {
  const shoppers = Array.from({ length: n }, (_, i) => ({
    url: urls[i % urls.length]!,
    userId: `${users}-${i}`,
  }));
  for (const s of shoppers) await join(s.url, productId, s.userId);
  return shoppers;
}

/** Admitted, then buys: the purchase's answer. */
export async function admittedBuys(productId: string, s: Shopper): Promise<Answer> {
  const token = await admitted(s.url, productId, s.userId);
  return buy(s.url, productId, s.userId, token);
}
