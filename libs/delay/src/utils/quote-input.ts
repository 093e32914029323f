/** The most characters of a caller's input that a message or log line echoes. */
export const MAX_ECHOED_CHARS = 100;

/**
 * A caller's input (a key, a topic, an option value) as it may appear in an
 * error message or a log line: a string is quoted as JSON.stringify does
 * (so a newline or an escape sequence shows as `\n`, `\u001b`, and cannot
 * fake a log line), anything else is shown in its JSON or String form; and
 * past `maxChars` characters it is cut, saying how long it was. Never throws.
 */
export function quoteInput(value: unknown, maxChars = MAX_ECHOED_CHARS): string {
  if (typeof value === 'string') {
    if (value.length <= maxChars) return JSON.stringify(value);
    return `${JSON.stringify(value.slice(0, maxChars))}... (${value.length} characters)`;
  }
  const text = shown(value);
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}... (${text.length} characters)`;
}

/** The form of a non-string: JSON where it has one, else String, else its tag; control characters escaped. */
function shown(value: unknown): string {
  let text: string;
  try {
    if (typeof value === 'object' && value !== null) text = JSON.stringify(value) ?? Object.prototype.toString.call(value);
    else text = String(value);
  } catch {
    text = Object.prototype.toString.call(value);
  }
  // A custom toString or a symbol's description may hold control characters too.
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
