import { escapeHtml, html, raw } from './html';

describe('html', () => {
  it('escapes every interpolated string, including quotes that could end an attribute', () => {
    const key = `"><script>alert('x')</script>&`;
    expect(html`<td title="${key}">${key}</td>`.text).toBe(
      '<td title="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;">&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;</td>',
    );
  });

  it('keeps nested fragments and joins arrays; drops null, undefined and false', () => {
    const rows = ['a<b', 'c'].map((cell) => html`<li>${cell}</li>`);
    expect(html`<ul>${rows}${null}${undefined}${false}</ul>`.text).toBe('<ul><li>a&lt;b</li><li>c</li></ul>');
  });

  it('passes raw markup through and escapes backticks', () => {
    expect(html`${raw('<b>')}${'`'}`.text).toBe('<b>&#96;');
    expect(escapeHtml('plain')).toBe('plain');
  });
});
