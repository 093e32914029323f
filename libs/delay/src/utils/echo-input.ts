/** How an error message quotes what the caller passed: strings JSON-quoted and cut to `max` characters, other values as String(). */
export function echoInput(value: unknown, max = 80): string {
  if (typeof value === 'string') return value.length > max ? `${JSON.stringify(value.slice(0, max))}…` : JSON.stringify(value);
  if (value === null || typeof value !== 'object') return String(value);
  return Object.prototype.toString.call(value);
}
