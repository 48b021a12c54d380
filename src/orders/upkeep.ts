/** The upkeep job's body: one sweep of the outboxes and of the payment window. */
import { sweepPayments, type PaymentWindowDeps } from './payment-window.js';
import { sweep, type SweepDeps } from './sweeper.js';

/**
 * Re-enqueues outbox orders no submitter took; then closes the orders whose expiry job was lost
 * (or is late by the same minimum age) and finishes the returns a crash cut short.
 */
export async function runUpkeep(deps: SweepDeps, paymentWindow: PaymentWindowDeps) {
  return {
    outbox: await sweep(deps),
    payments: await sweepPayments(paymentWindow, deps.minAgeMs),
  };
}
