import { MAX_ECHOED_CHARS, quoteInput } from './quote-input';

describe('quoteInput', () => {
  it('quotes a string as JSON: newlines and escape sequences cannot fake a log line', () => {
    expect(quoteInput('order-1')).toBe('"order-1"');
    expect(quoteInput('a\n[Nest] 1 - ERROR fake\u001b[31m')).toBe('"a\\n[Nest] 1 - ERROR fake\\u001b[31m"');
  });

  it('cuts a long string, saying how long it was', () => {
    const quoted = quoteInput('x'.repeat(100_000));
    expect(quoted).toBe(`"${'x'.repeat(MAX_ECHOED_CHARS)}"... (100000 characters)`);
  });

  it('shows other values in JSON or String form, bounded, and never throws', () => {
    expect(quoteInput(42)).toBe('42');
    expect(quoteInput(undefined)).toBe('undefined');
    expect(quoteInput({ a: 1 })).toBe('{"a":1}');
    const cyclic: { self?: unknown } = {};
    cyclic.self = cyclic;
    expect(quoteInput(cyclic)).toBe('[object Object]');
    expect(quoteInput(Symbol('a\nb'))).toBe('Symbol(a\\u000ab)');
    expect(quoteInput(10n ** 200n).length).toBeLessThan(MAX_ECHOED_CHARS + 30);
    expect(quoteInput({ toJSON: () => { throw new Error('no'); } })).toBe('[object Object]');
    expect(quoteInput([1, 2])).toBe('[1,2]');
  });
});
