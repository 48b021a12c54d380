/**
 * The vector selectors of a PromQL expression (`metric{matchers}`), found by a small tokenizer:
 * enough for the expressions of deploy/ (calls, aggregations with by/without, binary operators,
 * ranges), so a test can check that each one selects this service's series on a shared
 * Prometheus. Not a PromQL parser: an expression it cannot read throws instead of passing.
 */

export interface VectorSelector {
  /** the metric name ('' for a bare `{...}` selector) */
  metric: string;
  /** the label matchers, as written (without the braces) */
  matchers: string;
}

/** Words that are PromQL syntax, not metric names. */
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

const TOKENS =
  /"(?:[^"\\]|\\.)*"|\{[^}]*\}|\[[^\]]*\]|\d+(?:\.\d+)?(?:e[+-]?\d+)?[smhdwy]?|[A-Za-z_:][\w:]*|\S/gi;

export function vectorSelectors(expr: string): VectorSelector[] {
  const tokens = [...expr.matchAll(TOKENS)].map((m) => m[0]);
  const found: VectorSelector[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const next = tokens[i + 1];
    if (t.startsWith('{')) {
      found.push({ metric: '', matchers: t.slice(1, -1) });
      continue;
    }
    if (!/^[A-Za-z_:]/.test(t)) continue;
    if (KEYWORDS.has(t.toLowerCase())) {
      // by (a, b) / on (a): label names, not metrics
      if (next === '(') i = tokens.indexOf(')', i);
      continue;
    }
    // a function or an aggregation (`sum by (a) (...)` too)
    if (next === '(' || next === 'by' || next === 'without') continue;
    if (next?.startsWith('{')) {
      found.push({ metric: t, matchers: next.slice(1, -1) });
      i++;
    } else {
      found.push({ metric: t, matchers: '' });
    }
  }
  if (found.length === 0) throw new Error(`no vector selector found in: ${expr}`);
  return found;
}
