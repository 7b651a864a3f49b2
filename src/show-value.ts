/**
 * A value as an error message shows it: a string quoted (the string '250' never reads as the
 * number 250), a long one cut, and an object by its JSON, so a message says what was given.
 */
export function showValue(value: unknown): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
  }
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object' && value !== null) {
    try {
      const json = JSON.stringify(value);
      return json.length > 80 ? `${json.slice(0, 80)}...` : json;
    } catch {
      return Array.isArray(value) ? 'an array' : 'an object';
    }
  }
  return String(value);
}

/**
 * `<name> <value> <why>`, or, when nothing was given, `<name> is missing: it <why>` (`why`
 * reads after the value: `must be a whole number >= 1`).
 */
export function valueProblem(name: string, value: unknown, why: string): string {
  return value === undefined
    ? `${name} is missing: it ${why}`
    : `${name} ${showValue(value)} ${why}`;
}
