/**
 * The dashboard's only static assets, served from routes (no build step): one stylesheet and
 * one small script that adds "Copy" buttons (pages work without it).
 */

/** Stylesheet of every dashboard page: readable on a laptop and a phone, visible focus. */
export const STYLESHEET = `
:root {
  --bg: #f6f7f9; --surface: #ffffff; --text: #0f172a; --muted: #4b5563; --border: #d8dde5;
  --brand: #1e3a8a; --brand-text: #ffffff; --link: #1d4ed8; --focus: #f59e0b;
  --ok-bg: #dcfce7; --ok: #14532d; --warn-bg: #fef3c7; --warn: #713f12;
  --bad-bg: #fee2e2; --bad: #7f1d1d; --info-bg: #dbeafe; --info: #1e3a8a;
  --radius: 8px; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
a { color: var(--link); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible {
  outline: 3px solid var(--focus); outline-offset: 2px; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.skip { position: absolute; left: -999px; top: 0; background: var(--surface); padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; }
.devbar { background: repeating-linear-gradient(135deg, #7c2d12, #7c2d12 12px, #9a3412 12px, #9a3412 24px);
  color: #fff; text-align: center; font-weight: 700; padding: .35rem 1rem; font-size: .9rem; letter-spacing: .02em; }
header.top { background: var(--brand); color: var(--brand-text); }
header.top .inner { max-width: 76rem; margin: 0 auto; padding: .6rem 1rem; display: flex; flex-wrap: wrap;
  align-items: center; gap: .5rem 1.25rem; }
.brand { font-weight: 800; font-size: 1.15rem; color: var(--brand-text); text-decoration: none; letter-spacing: .01em; }
.brand small { font-weight: 500; opacity: .85; margin-left: .35rem; }
nav.main { flex: 1 1 auto; }
nav.main ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem; }
nav.main a { color: var(--brand-text); text-decoration: none; padding: .35rem .6rem; border-radius: 6px; display: inline-block; }
nav.main a:hover { background: rgba(255,255,255,.12); }
nav.main a[aria-current="page"] { background: rgba(255,255,255,.22); font-weight: 600; }
.who { display: flex; align-items: center; gap: .6rem; font-size: .9rem; flex-wrap: wrap; }
.who form { margin: 0; }
.who .roles { opacity: .85; }
.btn-link-light { background: transparent; color: var(--brand-text); border: 1px solid rgba(255,255,255,.6);
  border-radius: 6px; padding: .25rem .6rem; font: inherit; cursor: pointer; }
main { max-width: 76rem; margin: 0 auto; padding: 1.25rem 1rem 3rem; }
h1 { font-size: 1.6rem; margin: .25rem 0 1rem; line-height: 1.25; }
h2 { font-size: 1.2rem; margin: 1.75rem 0 .75rem; }
h3 { font-size: 1.05rem; margin: 0 0 .5rem; }
h4 { font-size: 1rem; margin: .5rem 0 .25rem; }
.card > h2:first-child, .card > .card-head:first-child h2, .grid > div > h4:first-child { margin-top: 0; }
p.lead { color: var(--muted); margin-top: -.5rem; }
.card { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: 1rem 1.1rem;
  margin: 0 0 1rem; }
.card.highlight { border: 2px solid var(--link); box-shadow: 0 0 0 4px var(--info-bg); }
.card-head { display: flex; flex-wrap: wrap; align-items: baseline; justify-content: space-between; gap: .25rem 1rem; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: .75rem 1.5rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .5rem 0; }
dl.facts dt { color: var(--muted); font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.mono, code, pre { font-family: var(--mono); font-size: .875rem; }
pre { background: #0f172a; color: #e2e8f0; padding: .75rem; border-radius: 6px; overflow: auto; max-height: 20rem;
  white-space: pre-wrap; overflow-wrap: anywhere; margin: .5rem 0; }
details summary { cursor: pointer; font-weight: 600; margin: .5rem 0; }
.muted { color: var(--muted); }
.small { font-size: .875rem; }
.badge { display: inline-block; border-radius: 999px; padding: .05rem .6rem; font-size: .8rem; font-weight: 700;
  white-space: nowrap; border: 1px solid transparent; }
.b-ok { background: var(--ok-bg); color: var(--ok); border-color: #86efac; }
.b-warn { background: var(--warn-bg); color: var(--warn); border-color: #fcd34d; }
.b-bad { background: var(--bad-bg); color: var(--bad); border-color: #fca5a5; }
.b-info { background: var(--info-bg); color: var(--info); border-color: #93c5fd; }
.b-neutral { background: #eef0f3; color: #374151; border-color: #d1d5db; }
.notice { border-radius: var(--radius); padding: .75rem 1rem; margin: 0 0 1rem; border: 1px solid; }
.notice.ok { background: var(--ok-bg); color: var(--ok); border-color: #86efac; }
.notice.bad { background: var(--bad-bg); color: var(--bad); border-color: #fca5a5; }
.notice.info { background: var(--info-bg); color: var(--info); border-color: #93c5fd; }
.notice.warn { background: var(--warn-bg); color: var(--warn); border-color: #fcd34d; }
.table-wrap { margin: 0 0 1rem; overflow-x: auto; background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); }
table { border-collapse: collapse; width: 100%; font-size: .925rem; }
th, td { text-align: left; padding: .55rem .7rem; border-bottom: 1px solid var(--border); vertical-align: top; }
thead th { background: #eef1f5; font-weight: 700; white-space: nowrap; }
tbody tr:last-child td { border-bottom: 0; }
form.decide { border-top: 1px solid var(--border); margin-top: .75rem; padding-top: .75rem; }
fieldset { border: 0; padding: 0; margin: 0 0 .75rem; min-width: 0; }
legend { font-weight: 700; margin-bottom: .35rem; padding: 0; }
.choices { display: flex; flex-wrap: wrap; gap: .5rem; }
.choice { display: inline-flex; align-items: center; gap: .4rem; border: 1px solid var(--border); border-radius: 6px;
  padding: .45rem .8rem; background: #fff; cursor: pointer; min-height: 2.75rem; }
.choice:has(input:checked) { border-color: var(--link); background: var(--info-bg); font-weight: 600; }
label.field { display: block; font-weight: 600; margin: .5rem 0 .25rem; }
input[type=text], input[type=email], select, textarea { font: inherit; width: 100%; max-width: 40rem; padding: .5rem .6rem;
  border: 1px solid #9ca3af; border-radius: 6px; background: #fff; color: var(--text); }
textarea { min-height: 4.5rem; }
.inline { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem; margin: .5rem 0; }
.inline select { width: auto; }
.hint { color: var(--muted); font-size: .875rem; margin: .25rem 0; }
button, .button { font: inherit; font-weight: 600; border-radius: 6px; padding: .55rem 1.1rem; border: 1px solid transparent;
  cursor: pointer; min-height: 2.75rem; display: inline-flex; align-items: center; justify-content: center; text-decoration: none; }
.primary { background: var(--link); color: #fff; }
.primary:hover { background: #1e40af; }
.danger { background: #b91c1c; color: #fff; }
.danger:hover { background: #991b1b; }
.secondary { background: #fff; color: var(--text); border-color: #9ca3af; }
.secondary:hover { background: #f3f4f6; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin-top: .75rem; }
.secret { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.secret input { font-family: var(--mono); flex: 1 1 20rem; }
ol.timeline { list-style: none; margin: 0; padding: 0; }
ol.timeline li { position: relative; padding: .6rem 0 .6rem 1.6rem; border-left: 2px solid var(--border); margin-left: .4rem; }
ol.timeline li::before { content: ""; position: absolute; left: -.5rem; top: 1rem; width: .85rem; height: .85rem;
  border-radius: 50%; background: var(--surface); border: 2px solid #64748b; }
ol.timeline li.d-allow::before { border-color: #16a34a; background: #dcfce7; }
ol.timeline li.d-allow_with_flag::before { border-color: #d97706; background: #fef3c7; }
ol.timeline li.d-deny::before { border-color: #dc2626; background: #fee2e2; }
ol.timeline li.d-require_approval::before { border-color: #2563eb; background: #dbeafe; }
.center-card { max-width: 34rem; margin: 3rem auto; }
.userlist { list-style: none; padding: 0; margin: 0 0 1rem; display: grid; gap: .5rem; }
.userlist button { width: 100%; justify-content: space-between; text-align: left; gap: 1rem; }
@media (max-width: 40rem) {
  body { font-size: 15px; }
  header.top .inner { padding: .5rem .75rem; }
  main { padding: 1rem .75rem 2rem; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dt { margin-top: .35rem; }
  h1 { font-size: 1.35rem; }
  .actions button, .actions .button { flex: 1 1 auto; }
}
`;

/** Progressive enhancement: a "Copy" button next to every `[data-copy]` input. */
export const SCRIPT = `
document.querySelectorAll("input[data-copy]").forEach(function (input) {
  var b = document.createElement("button");
  b.type = "button"; b.className = "secondary"; b.textContent = "Copy";
  b.addEventListener("click", function () {
    input.select();
    (navigator.clipboard ? navigator.clipboard.writeText(input.value) : Promise.reject()).then(
      function () { b.textContent = "Copied"; }, function () { document.execCommand("copy"); b.textContent = "Copied"; });
  });
  input.addEventListener("focus", function () { input.select(); });
  input.insertAdjacentElement("afterend", b);
});
`;
