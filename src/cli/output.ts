/** How the CLI talks to its operator: progress lines on stderr, and errors that end a command. */
import { redactText } from '../config/redact.js';

export { redactUrl } from '../config/redact.js';

/** A progress line on stderr; a URL's password in it is masked, wherever it came from. */
export const progress = (line: string) => process.stderr.write(`[seckill] ${redactText(line)}\n`);

/** Friendly failure for errors that are the operator's to fix: message only, no stack. */
export class ExitError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}
