/**
 * Credentials never leave the process in a message or a log line: terminals, CI logs and log
 * stores keep what they are shown.
 */

/** `scheme://user:password@` (and `scheme://:password@`): the password part masked. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@'"]*):[^\s/'"]*@/gi;

/** A URL fit for a message: its password, if any, masked (also when the URL does not parse). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return redactText(url);
  }
}

/** Any text (an error message, a log field) with the passwords of the URLs inside it masked. */
export function redactText(text: string): string {
  return text.replace(URL_CREDENTIALS, '$1:***@');
}
