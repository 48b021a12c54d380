/**
 * The timings of the active set (catalogue/active-set.ts, sale/activity-leases.ts). The sweeper archives a product only once its time
 * in the set has passed by QUIET_MS; a deduct accepts a touch only TOUCH_LEASE_MS old. With
 * QUIET_MS well above TOUCH_LEASE_MS (plus any clock skew between Redis servers), every work a
 * deduct wrote is older than the sweeper's read that found the product quiet.
 */

/** How old a touch a deduct accepts (ms). */
export const TOUCH_LEASE_MS = 60_000;

/** A process touches again once its touch is this old (ms): well inside the lease. */
export const TOUCH_REFRESH_MS = 20_000;

/** How long a product stays active after its last touch, or its sale's start or end (ms). */
export const QUIET_MS = 300_000;

/**
 * Clock skew allowed between Redis servers (the sweeper's clock, the active set's, a segment's)
 * when a product untouched since a quiet read is trusted to have no new work (ms).
 */
export const SKEW_MS = 10_000;
