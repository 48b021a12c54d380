/**
 * How a promise ended within `ms`: `answered <value>` (`answered` alone for no value or a
 * function), `failed: <its error's message>`, or 'never settled' (the hangs the in-flight tests
 * look for).
 */
export async function settledWithin(p: Promise<unknown>, ms: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((r) => (timer = setTimeout(() => r('never settled'), ms)));
  try {
    return await Promise.race([
      p.then(
        (v) => (v === undefined || typeof v === 'function' ? 'answered' : `answered ${String(v)}`),
        (err: unknown) => `failed: ${(err as Error).message}`,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
