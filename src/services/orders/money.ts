/**
 * Prices: an integer amount in the currency's minor unit (cents for EUR, yen for JPY) and an ISO
 * 4217 code, as every payment provider takes them; never a float.
 */
import { z } from 'zod';

/** The ISO 4217 codes in use (ICU's list, as Node.js ships it). */
const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/** Largest amount: its total for the largest order (1,000 units) stays an exact JS integer. */
export const MAX_AMOUNT = 1_000_000_000_000;

export const currencyCode = z
  .string()
  .refine((code) => CURRENCIES.has(code), 'must be an ISO 4217 currency code in upper case (EUR)');

export const amount = z.number().int().min(0).max(MAX_AMOUNT);

export const priceSchema = z.strictObject({
  amount: amount.describe("in the currency's minor unit (cents: 1999 is 19.99 EUR)"),
  currency: currencyCode,
});
