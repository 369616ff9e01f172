"""The report page's inline CSS and its one small script (no external assets)."""

__all__ = ["CSS", "IMAGE_SCRIPT"]

CSS = """
:root { --ink: #212529; --muted: #5c636a; --line: #dee2e6; --soft: #f6f7f9;
        --pass: #2b8a3e; --fail: #c92a2a; --accent: #364fc7; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: var(--ink);
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", Roboto, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 28px 32px 48px; }
h1 { font-size: 26px; margin: 0 0 12px; letter-spacing: -0.01em; }
h2 { font-size: 20px; margin: 36px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 0 0 8px; }
dl.facts { display: flex; flex-wrap: wrap; gap: 4px 28px; margin: 0 0 16px; color: var(--muted); }
dl.facts div { display: flex; gap: 6px; }
dl.facts dt::after { content: ":"; }
dl.facts dd { margin: 0; color: var(--ink); font-weight: 600; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 14px;
         margin: 8px 0 18px; }
.card { border: 1px solid var(--line); border-left: 5px solid var(--accent); border-radius: 6px;
        padding: 10px 14px; background: var(--soft); }
.card.pass { border-left-color: var(--pass); }
.card.fail { border-left-color: var(--fail); }
.card .label { font-size: 12px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); }
.card .value { font-size: 19px; font-weight: 650; }
.card.pass .value { color: var(--pass); }
.card.fail .value { color: var(--fail); }
.card .detail { font-size: 13px; color: var(--muted); }
table { border-collapse: collapse; font-size: 14px; margin: 6px 0 12px; }
th, td { padding: 5px 12px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { background: var(--soft); font-weight: 600; border-bottom: 2px solid var(--line); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.budget td { text-align: right; font-variant-numeric: tabular-nums; }
table.decisions { width: 100%; }
table.cands { font-size: 13px; }
table.cands th, table.cands td { padding: 3px 9px; }
tr.chosen { background: #edf2ff; }
.stop { color: var(--fail); font-weight: 600; }
details { margin: 4px 0; }
details summary { cursor: pointer; color: var(--accent); }
details[open] { overflow-x: auto; }
figure { margin: 0 0 34px; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid var(--line);
             border-radius: 4px; }
figcaption { margin-top: 6px; color: var(--muted); font-size: 14px; max-width: 900px; }
figure.empty { padding: 12px 16px; border: 1px dashed var(--line); border-radius: 6px; }
.note { color: var(--muted); font-style: italic; margin: 6px 0; }
footer { margin-top: 40px; color: var(--muted); font-size: 13px; }
"""

# Marks each <img> with data-loaded="1" once it has decoded with a non-zero width, or "0"
# when it failed; the tests read these marks back from a headless browser's DOM.
IMAGE_SCRIPT = """
(function () {
  function mark(img) { img.setAttribute("data-loaded", img.complete && img.naturalWidth > 0 ? "1" : "0"); }
  document.querySelectorAll("img").forEach(function (img) {
    img.addEventListener("load", function () { mark(img); });
    img.addEventListener("error", function () { img.setAttribute("data-loaded", "0"); });
    if (img.complete) { mark(img); }
  });
  window.addEventListener("load", function () {
    document.querySelectorAll("img").forEach(mark);
    document.body.setAttribute("data-ready", "1");
  });
})();
"""
