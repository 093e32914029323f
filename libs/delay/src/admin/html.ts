/**
 * A fragment of HTML that is already safe to send. Only the `html` tag and
 * `raw` make one, so a value read from the store (a key, a payload, an
 * error message) can only reach the page escaped.
 */
export class SafeHtml {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => ESCAPES[char] as string);
}

/** Template tag: every interpolated value is escaped unless it is SafeHtml; arrays are joined. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] as string;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] as string);
  return new SafeHtml(out);
}

/** Trusted markup written in this folder (the stylesheet), never data. */
export function raw(text: string): SafeHtml {
  return new SafeHtml(text);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.text;
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map((item: HtmlValue) => render(item)).join('');
  return escapeHtml(String(value));
}
