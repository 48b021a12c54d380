/**
 * Waiting on a condition, never on the clock: polls `probe` until it returns something truthy,
 * and on timeout says what it waited for and what it saw last.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs: number,
  intervalMs = 250,
  lastSeen?: () => string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      const seen = lastSeen?.() ?? lastError;
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${seen ? `; last: ${seen}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
