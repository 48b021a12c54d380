/** How the CLI talks to its operator: progress lines on stderr, and errors that end a command. */

export const progress = (line: string) => process.stderr.write(`[seckill] ${line}\n`);

/** Friendly failure for errors that are the operator's to fix: message only, no stack. */
export class ExitError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** A URL fit for a log line: the password, if any, masked. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}
