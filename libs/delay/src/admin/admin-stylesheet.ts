import { raw, SafeHtml } from './html';

/**
 * The page's only styles, inline so nothing is fetched from anywhere. Below
 * 640px wide every table row becomes a card with labelled cells, so the page
 * reads on a phone without sideways scrolling.
 */
export const ADMIN_STYLESHEET: SafeHtml = raw(`
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d232b;background:#f4f6f8}
header{background:#1f3a5f;color:#fff;padding:.7rem 1rem}
header a{color:#fff;text-decoration:none;font-weight:600}
nav.crumbs{font-size:.9rem;opacity:.85}
nav.crumbs a{font-weight:400}
main{padding:1rem;max-width:72rem;margin:0 auto}
h1{font-size:1.35rem;margin:.2rem 0}
h2{font-size:1.1rem;margin:1.2rem 0 .5rem}
table{width:100%;border-collapse:collapse;background:#fff;border:1px solid #d8dee4}
th,td{padding:.45rem .6rem;border-bottom:1px solid #e4e8ec;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600;font-size:.85rem}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:13px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere;white-space:pre-wrap;margin:0}
.error{color:#9b1c1c}
.badge{display:inline-block;padding:0 .45rem;border-radius:.6rem;font-size:.8rem;background:#e4e8ec}
.badge.paused{background:#fde68a}
.badge.running{background:#bfdbfe}
.badge.dead{background:#fecaca}
.badge.succeeded{background:#dcfce7}
.badge.retrying{background:#fde68a}
.badge.recurring{background:#ddd6fe;color:#1d232b;text-decoration:none}
.notice{background:#dcfce7;border:1px solid #86efac;padding:.5rem .8rem;margin-bottom:1rem}
.problem{background:#fee2e2;border:1px solid #fca5a5;padding:.5rem .8rem;margin-bottom:1rem}
form.inline{display:inline}
button{font:inherit;font-size:.85rem;padding:.3rem .7rem;border:1px solid #9aa5b1;border-radius:.3rem;background:#fff;cursor:pointer;margin:.1rem 0}
button.danger{border-color:#dc2626;color:#9b1c1c}
.pager{display:flex;gap:1rem;align-items:center;margin:.7rem 0;flex-wrap:wrap}
.muted{color:#5b6875;font-size:.85rem}
details summary{cursor:pointer;color:#1f3a5f}
@media (max-width:640px){
  main{padding:.6rem}
  table,thead,tbody,tr,th,td{display:block}
  thead{display:none}
  tr{border-bottom:2px solid #d8dee4;padding:.3rem 0}
  td{border:none;padding:.25rem .6rem}
  td.num{text-align:left}
  td[data-label]::before{content:attr(data-label);display:block;font-size:.75rem;color:#5b6875;text-transform:uppercase}
}
`);
