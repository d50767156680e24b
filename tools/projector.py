"""The projector view: every notebook run and written as a large-type page for a room's projector, offline.

Each notebook is executed top to bottom (nbclient, a fresh python3 kernel) and written as one HTML page in which
every cell is a slide-sized block in large type: the markdown as HTML, the code highlighted, its outputs below
(figures and panels as the PNG they drew; a panel's controls need JupyterLab). ``Page Down`` / ``→`` / space jump to
the next block, ``Page Up`` / ``←`` to the previous one, ``Home`` / ``End`` to either end; ``+`` / ``-`` change the
type size. The pages load nothing from outside themselves (styles, script and images are inline), so they open
from a USB stick with no network. A collapsed ``<details>`` answer stays collapsed until clicked.

By default the attendees' copies (``notebooks/NN_*.ipynb``) are projected: what the room sees on its laptops, with
the exercises unanswered. ``--solved`` projects the instructor copies (``notebooks/solved/NN_*-solved.ipynb``)
instead; either way a notebook's page is ``NN_name.html``.

    .venv/bin/python tools/projector.py                  # all notebooks -> site/projector/ (about two minutes)
    .venv/bin/python tools/projector.py --solved         # the solved copies
    .venv/bin/python tools/projector.py 10 20            # only notebooks 10 and 20
    .venv/bin/python tools/projector.py --out DIR        # somewhere else

Run by another Python, it runs itself again with the repository's ``.venv`` (it needs the workbook's packages).
"""

from __future__ import annotations

if __name__ == "__main__":  # as a script: tools/ is sys.path[0]; run with the repository's .venv python
    import _venv

    _venv.reexec(__file__)

import html
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"  # the attendees' copies
SOLVED = NOTEBOOKS / "solved"  # the instructors' copies, NN_name-solved.ipynb
OUT = ROOT / "site" / "projector"
EXECUTE_TIMEOUT_S = 300
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

CSS = """
:root { --size: 26px; }
html { scroll-snap-type: y proximity; }
body { font: var(--size)/1.45 "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 0; background: #fff;
       color: #111; }
nav.top { position: sticky; top: 0; background: #f3f3f3; border-bottom: 1px solid #ccc; padding: .2em .8em;
          font-size: .6em; z-index: 2; }
nav.top a { margin-right: 1.2em; }
section.block { scroll-snap-align: start; min-height: 40vh; padding: .6em 1.4em 1.2em;
                border-bottom: 1px dashed #ccc; }
section.block:focus-within, section.block.current { background: #fcfcf4; }
h1 { font-size: 1.6em; margin: .2em 0; } h2 { font-size: 1.35em; margin: .2em 0; } h3 { font-size: 1.15em; }
p, li { max-width: 46em; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: .9em; background: #f2f2f2; }
pre { font: .8em/1.35 "DejaVu Sans Mono", monospace; background: #f6f6f6; padding: .5em .7em; overflow-x: auto;
      white-space: pre-wrap; word-break: break-word; }
div.source pre { border-left: 6px solid #2f6db5; }
div.output pre { border-left: 6px solid #999; background: #fff; }
div.output pre.stderr { border-left-color: #b42318; }
img { max-width: 100%; height: auto; display: block; margin: .3em 0; }
img.figure { width: min(100%, 1240px); }
details { margin: .4em 0; padding: .3em .6em; border: 1px solid #bbb; }
summary { cursor: pointer; font-weight: bold; }
table { border-collapse: collapse; font-size: .85em; } td, th { border: 1px solid #bbb; padding: .15em .45em; }
.note { font-style: italic; color: #555; font-size: .8em; }
a.anchor-link { display: none; }
"""

# Keys move block by block; + and - scale the type. Inline: nothing is fetched.
SCRIPT = """
(function () {
  var blocks = Array.prototype.slice.call(document.querySelectorAll('section.block'));
  var i = 0;
  function show(n) {
    i = Math.max(0, Math.min(blocks.length - 1, n));
    blocks.forEach(function (b, k) { b.classList.toggle('current', k === i); });
    blocks[i].scrollIntoView({block: 'start'});
  }
  function nearest() {
    var best = 0;
    blocks.forEach(function (b, k) { if (b.getBoundingClientRect().top <= 60) { best = k; } });
    return best;
  }
  document.addEventListener('keydown', function (e) {
    if (e.target && /INPUT|TEXTAREA/.test(e.target.tagName)) { return; }
    var root = document.documentElement;
    var size = parseFloat(getComputedStyle(root).getPropertyValue('--size'));
    if (e.key === 'PageDown' || e.key === 'ArrowRight' || (e.key === ' ' && !e.shiftKey)) { show(nearest() + 1); }
    else if (e.key === 'PageUp' || e.key === 'ArrowLeft' || (e.key === ' ' && e.shiftKey)) { show(nearest() - 1); }
    else if (e.key === 'Home') { show(0); }
    else if (e.key === 'End') { show(blocks.length - 1); }
    else if (e.key === '+' || e.key === '=') { root.style.setProperty('--size', (size + 2) + 'px'); return; }
    else if (e.key === '-') { root.style.setProperty('--size', Math.max(12, size - 2) + 'px'); return; }
    else { return; }
    e.preventDefault();
  });
})();
"""


def notebook_paths(solved: bool, only: list[str]) -> list[Path]:
    """The notebooks to project, in order: ``NN_*.ipynb`` of the attendees' or the solved copies."""
    folder = SOLVED if solved else NOTEBOOKS
    paths = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if only:
        paths = [p for p in paths if p.name[:2] in only]
        missing = sorted(set(only) - {p.name[:2] for p in paths})
        if missing:
            raise SystemExit(f"no notebook numbered {', '.join(missing)} in {folder.relative_to(ROOT)}")
    return paths


def _markdown(text: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(text)


def _code(source: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(source, PythonLexer(), HtmlFormatter(nowrap=True, noclasses=True))


def _outputs(outputs: list) -> str:
    """Outputs as a page without a kernel shows them: images inline, text as text, a panel as its PNG."""
    parts = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            cls = ' class="stderr"' if o.get("name") == "stderr" else ""
            parts.append(f"<pre{cls}>{html.escape(''.join(o.get('text', '')))}</pre>")
        elif kind == "error":
            parts.append(f'<pre class="stderr">{html.escape(o.get("ename", ""))}: {html.escape(o.get("evalue", ""))}'
                         "</pre>")
        elif kind in ("display_data", "execute_result"):
            data = o.get("data", {})
            if "image/png" in data:
                png = data["image/png"].replace("\n", "")
                parts.append(f'<img class="figure" alt="figure" src="data:image/png;base64,{png}">')
                summary = data.get("text/plain")
                if WIDGET_VIEW in data and summary:
                    parts.append(f"<pre>{html.escape(''.join(summary))}</pre>")
            elif "text/html" in data and WIDGET_VIEW not in data:
                parts.append(_inline_only("".join(data["text/html"])))
            elif "text/plain" in data:
                parts.append(f"<pre>{html.escape(''.join(data['text/plain']))}</pre>")
            elif WIDGET_VIEW in data:
                parts.append('<p class="note">An interactive panel: run the notebook in JupyterLab to move it.</p>')
    return "".join(parts)


_EXTERNAL = re.compile(r"""<(script|link|iframe)\b[^>]*\b(src|href)\s*=\s*["'](?!data:)[^"']*["'][^>]*>""", re.I)


def _inline_only(fragment: str) -> str:
    """An output's HTML without any element that would load something (scripts, stylesheets, frames)."""
    return _EXTERNAL.sub("", fragment)


def _title(nb, path: Path) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return path.stem


def page(nb, path: Path, *, nav: str) -> str:
    """One notebook as a projector page: a block per cell, navigation cells left out."""
    blocks: list[str] = []
    for cell in nb.cells:
        if "nav" in cell.get("metadata", {}).get("tags", []) or not cell.source.strip():
            continue
        if cell.cell_type == "markdown":
            body = _markdown(cell.source)
        elif cell.cell_type == "code":
            body = (f'<div class="source"><pre>{_code(cell.source)}</pre></div>'
                    f'<div class="output">{_outputs(cell.get("outputs", []))}</div>')
        else:
            continue
        blocks.append(f'<section class="block" id="b{len(blocks) + 1}" tabindex="-1">{body}</section>')
    title = html.escape(_title(nb, path))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{title}</title><style>{CSS}</style></head><body>"
            f'<nav class="top">{nav} · keys: PgDn/PgUp or →/← next/previous block, +/− type size</nav>'
            + "".join(blocks) + f"<script>{SCRIPT}</script></body></html>\n")


def _links(html_text: str) -> str:
    """Links between notebooks (and to the glossary) point at their projector pages."""
    html_text = re.sub(r'href="(\.\./)?([0-9][0-9]_[A-Za-z0-9_]+?)(?:-solved)?\.ipynb(#[^"]*)?"', r'href="\2.html\3"',
                       html_text)
    return re.sub(r'href="(\.\./)?glossary\.md(#[^"]*)?"', r'href="glossary.html\2"', html_text)


def execute(nb, cwd: Path):
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=EXECUTE_TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def build(paths: list[Path], out: Path) -> list[Path]:
    """Execute each notebook and write its projector page, then an index linking them."""
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    written, items = [], []
    for path in paths:
        nb = execute(nbformat.read(path, as_version=4), path.parent)
        title = _title(nb, path)
        target = out / f"{path.stem.removesuffix('-solved')}.html"
        target.write_text(_links(page(nb, path, nav='<a href="index.html">all notebooks</a>')))
        written.append(target)
        items.append(f'<li><a href="{target.name}">{html.escape(title)}</a></li>')
        print(f"wrote {target}", flush=True)
    index = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>vnetlab: projector view</title>"
             f"<style>{CSS}</style></head><body><section class=\"block\"><h1>vnetlab: projector view</h1>"
             "<p>Every notebook, run, in large type. Keys: PgDn/PgUp or →/← move block by block, +/− change the "
             "type size. Nothing here loads from the network.</p><ol>" + "".join(items) + "</ol>"
             '<p><a href="glossary.html">Glossary</a></p></section></body></html>\n')
    (out / "index.html").write_text(index)
    glossary = _markdown((NOTEBOOKS / "glossary.md").read_text())
    (out / "glossary.html").write_text(_links(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>vnetlab: glossary</title>"
        f"<style>{CSS}</style></head><body><nav class=\"top\"><a href=\"index.html\">all notebooks</a></nav>"
        f"<section class=\"block\">{glossary}</section></body></html>\n"))
    return [*written, out / "glossary.html", out / "index.html"]


def main(argv: list[str]) -> int:
    solved = "--solved" in argv
    args = [a for a in argv if a != "--solved"]
    out = OUT
    if "--out" in args:
        i = args.index("--out")
        if i + 1 >= len(args):
            print("--out needs a directory", file=sys.stderr)
            return 2
        out = Path(args[i + 1]).resolve()
        del args[i:i + 2]
    if any(not re.fullmatch(r"\d\d", a) for a in args):
        print(__doc__)
        return 2
    written = build(notebook_paths(solved, args), out)
    print(f"open {written[-1]} in a browser (offline)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
