/**
 * The shapes a Lua script answers, read from its own top-level `return` statements (those of its
 * local functions are theirs, not the script's): a scalar, or a table of so many elements. A
 * script that answers more than one shape names its answers in a reply table, `--- @replies`,
 * which its gateway decodes by name; `npm run structure` counts those that do not
 * (multiShapeScriptsWithoutReplies).
 */

/** Lua code with its comments and string literals blanked (their length kept). */
function codeOnly(lua: string): string {
  const blank = (text: string) => text.replace(/[^\n]/g, ' ');
  return lua
    .replace(/--\[\[[\s\S]*?\]\]/g, blank)
    .replace(/--[^\n]*/g, blank)
    .replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"/g, (s) => `'${' '.repeat(s.length - 2)}'`);
}

/** The expression a `return` at `from` answers: to its line's end (or an `end` on it), brackets closed. */
function returnedAt(code: string, from: number): string {
  let depth = 0;
  let at = from;
  for (; at < code.length; at++) {
    const ch = code[at]!;
    if ('({['.includes(ch)) depth++;
    else if (')}]'.includes(ch)) depth--;
    else if (ch === '\n' && depth <= 0) break;
  }
  return code
    .slice(from, at)
    .replace(/\s+end\b[^}]*$/, '')
    .trim();
}

/** How many elements a table constructor `{...}` holds (separators at its depth, a last one aside). */
function tableLength(expr: string): number {
  const inner = expr.slice(1, expr.lastIndexOf('}')).trim().replace(/[,;]$/, '');
  if (inner === '') return 0;
  let depth = 0;
  let count = 1;
  for (const ch of inner) {
    if ('({['.includes(ch)) depth++;
    else if (')}]'.includes(ch)) depth--;
    else if ((ch === ',' || ch === ';') && depth === 0) count++;
  }
  return count;
}

/** One shape's name: `scalar` or `table of N`. */
function shapeOf(expr: string): string {
  return expr.startsWith('{') && expr.endsWith('}') ? `table of ${tableLength(expr)}` : 'scalar';
}

/** The distinct shapes of a script's top-level `return` statements. */
export function replyShapes(lua: string): string[] {
  const code = codeOnly(lua);
  const shapes = new Set<string>();
  // the blocks open at each point: a function's returns are not the script's
  const blocks: Array<'function' | 'block'> = [];
  for (const m of code.matchAll(/\b(function|if|do|repeat|end|until|return)\b/g)) {
    const word = m[1]!;
    if (word === 'function') blocks.push('function');
    else if (word === 'if' || word === 'do' || word === 'repeat') blocks.push('block');
    else if (word === 'end' || word === 'until') blocks.pop();
    else if (!blocks.includes('function')) shapes.add(shapeOf(returnedAt(code, m.index + 6)));
  }
  return [...shapes].sort();
}

/** Whether the script names its answers in a reply table. */
export const hasReplies = (lua: string) => /^--- @replies$/m.test(lua);
