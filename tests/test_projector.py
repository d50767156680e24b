"""The projector view (tools/projector.py): large type, every figure inline, and nothing loaded from outside the
pages it writes, so that it opens offline from a USB stick."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "projector.py"


def _tool():
    spec = importlib.util.spec_from_file_location("projector", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Refs(HTMLParser):
    """Every URL a page names: attributes that load or link, and url() / @import in inline styles."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self._in_style = tag == "style"
        for name, value in attrs:
            if name in ("src", "href", "srcset", "poster", "data", "action", "formaction") and value is not None:
                self.refs.append((tag, name, value))
            if name == "style" and value:
                self._css(value)

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self._css(data)

    def _css(self, text):
        self.refs += [("style", "url", u.strip("'\" ")) for u in re.findall(r"url\(([^)]*)\)", text)]
        self.refs += [("style", "@import", m) for m in re.findall(r"@import\s+([^;]+)", text)]


_PAGES = {f"{p.stem}.html" for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}


def external_refs(out: Path) -> list[str]:
    """What any page in ``out`` would fetch or link outside ``out``: anything but data:, a fragment, or a file
    name in ``out`` itself or another notebook's page (with an optional fragment)."""
    bad = []
    for page in sorted(out.glob("*.html")):
        parser = _Refs()
        parser.feed(page.read_text())
        for tag, attr, url in parser.refs:
            if url.startswith(("data:", "#")):
                continue
            target = url.split("#", 1)[0]
            sibling = target in _PAGES  # another notebook's page: a full build writes it beside this one
            if "/" in target or ":" in target or not ((out / target).is_file() or sibling):
                bad.append(f"{page.name}: <{tag} {attr}={url[:80]!r}>")
    return bad


def test_page_is_large_type_inline_and_self_contained(tmp_path):
    """A notebook with a figure, a panel's PNG fallback, a collapsed answer and an output that tries to load a
    script: the page keeps the images inline, the answer collapsed, drops the script, and loads nothing."""
    tool = _tool()
    nb = nbformat.v4.new_notebook()
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 10 · A title\n*Predict:* how much?\n\n<details><summary>Answer</summary>"
                                      "42</details>\n\nSee [20](20_tailroom_thresholds.ipynb) and the "
                                      "[glossary](glossary.md#truesize)."),
        nbformat.v4.new_code_cell("draw()", outputs=[
            nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"}),
            nbformat.v4.new_output("display_data", data={
                "application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2},
                "image/png": png, "text/plain": "panel summary"}),
            nbformat.v4.new_output("display_data", data={
                "text/html": '<script src="https://cdn.example/x.js"></script><b>ok</b>'}),
            nbformat.v4.new_output("stream", name="stdout", text="printed\n"),
        ]),
    ]
    html = tool._links(tool.page(nb, Path("10_x.ipynb"), nav='<a href="index.html">all</a>'))
    assert html.count('src="data:image/png;base64,') == 2
    assert "<details><summary>Answer</summary>" in html  # collapsed as in JupyterLab
    assert "cdn.example" not in html and "<b>ok</b>" in html
    assert 'href="20_tailroom_thresholds.html"' in html and 'href="glossary.html#truesize"' in html
    assert "--size: 26px" in html and "printed" in html and "panel summary" in html
    for name in ("10_x.html", "20_tailroom_thresholds.html", "glossary.html", "index.html"):
        (tmp_path / name).write_text(html if name == "10_x.html" else "<p>page</p>")
    assert external_refs(tmp_path) == []
    (tmp_path / "10_x.html").write_text(html.replace("</body>", '<link rel="stylesheet" href="https://x/y.css">'
                                                              "</body>"))
    assert external_refs(tmp_path)  # the check sees a stylesheet from the network


def test_projector_command_runs_a_notebook_offline(tmp_path):
    """The README's command, for one notebook: it runs it and writes pages that load nothing from outside."""
    out = tmp_path / "projector"
    r = subprocess.run([sys.executable, str(TOOL), "05", "--out", str(out)], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    page = out / "05_primer_skb_gro_gso.html"
    assert page.is_file() and (out / "index.html").is_file() and (out / "glossary.html").is_file()
    text = page.read_text()
    assert text.count("data:image/png;base64,") >= 3  # notebook 05 draws an skb, a GRO fill and a stack
    assert 'class="stderr"' not in text
    assert external_refs(out) == []


def test_projector_refuses_an_unknown_notebook(tmp_path):
    missing = "99"  # source: notebooks/ has no notebook 99
    r = subprocess.run([sys.executable, str(TOOL), missing, "--out", str(tmp_path)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and f"no notebook numbered {missing}" in (r.stdout + r.stderr)


@pytest.mark.parametrize("arg", ["--bogus", "x1"])
def test_projector_usage_on_a_bad_argument(arg, tmp_path):
    r = subprocess.run([sys.executable, str(TOOL), arg, "--out", str(tmp_path)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "projector" in r.stdout
