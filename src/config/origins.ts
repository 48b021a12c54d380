/** Web origins as CORS_ORIGINS lists them: each one in full, no wildcard. */

/** What is wrong with `text` as a web origin (scheme://host[:port], as a browser sends it). */
export function originProblem(text: string): string | undefined {
  const example = 'e.g. https://shop.example or http://127.0.0.1:3080';
  // a URL parser takes `*` as a host's letter: a wildcard would be allowed as a literal nobody sends
  if (text.includes('*')) {
    return `${JSON.stringify(text)}: wildcards are not supported; list each origin, comma-separated (e.g. https://de.shop.example,https://fr.shop.example)`;
  }
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    return `${JSON.stringify(text)} is not an origin (${example})`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `${JSON.stringify(text)}: an origin starts with http:// or https://`;
  }
  if (parsed.origin !== text) {
    return `${JSON.stringify(text)} is not an origin as a browser sends it: ${JSON.stringify(parsed.origin)} (no path, no trailing slash, lower case, no default port)`;
  }
  return undefined;
}
