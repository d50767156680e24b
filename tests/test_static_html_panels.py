"""Where widgets cannot run, a panel shows as its summary and current figure: a notebook executed by nbclient and
exported by nbconvert's HTML exporter (the offline static copy) shows the panel's PNG and needs no widget JS.

The export runs without stored widget state (``ExecutePreprocessor.store_widget_state=False`` on the command
line): with widget state in the notebook, nbconvert's lab template would instead embed the widget view and load
@jupyter-widgets/html-manager from a CDN to draw it, which an offline copy cannot do.
"""

import re

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

CELLS = [
    "from vnetlab.widgets import rxpanels\nfrom vnetlab.viz import thresholds",
    "rxpanels.packet_panel(payload_len=1162)",
    "rxpanels.packet_panel(payload_len=5000)",
    "thresholds.draw_path_vs_payload(1536)",
]


def test_static_html_shows_panel_png_without_widget_js(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [c.outputs for c in nb.cells]
    panel = outputs[1][0]["data"]
    assert {"application/vnd.jupyter.widget-view+json", "image/png", "text/html", "text/plain"} <= set(panel)
    assert panel["text/plain"].startswith("build_skb")
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert "html-manager" not in body and "embed-amd" not in body and "widget-state+json" not in body
    imgs = re.findall(r"<img[^>]*>", body)
    panel_imgs = [i for i in imgs if 'width="900"' in i and i.startswith("<img alt=\"build_skb")]
    assert len(panel_imgs) == 1 and "data:image/png;base64," in panel_imgs[0]
    assert 'class="vnetlab-panel-summary"' in body and "<b>build_skb</b>" in body
    # the panel with bad input: its error text, and no image (no stale figure)
    assert "payload_len=5000" in body  # source: the third cell of CELLS above
    err = outputs[2][0]["data"]
    assert "image/png" not in err and "<img" not in err["text/html"]
    # the static figure is an image too, at the width it was drawn for
    assert outputs[3][0]["data"]["image/png"]


def _nbtools():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("nbtools", Path(__file__).resolve().parents[1] / "tools" /
                                                  "nbtools.py")  # a script, not the package
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_static_copy_renders_the_handout_and_links_it(tmp_path):
    # nbtools.build_site with no notebooks writes just the pages beside them: glossary, handout, index
    nbtools = _nbtools()
    written = nbtools.build_site([], tmp_path)
    assert {p.name for p in written} == {"glossary.html", "handout.html", "index.html"}
    handout = (tmp_path / "handout.html").read_text()
    index = (tmp_path / "index.html").read_text()
    assert 'href="handout.html"' in index and 'href="handout.html"' in handout  # linked, and in the nav
    # the key numbers as an HTML table (not markdown pipes), the commands as code blocks
    assert "<table>" in handout and "| What |" not in handout
    rows = re.findall(r"<tr>(.*?)</tr>", handout, re.S)
    assert any("956,864 → 1,158,465" in r for r in rows)  # the build_skb patch mail (docs/kernel/rx.md#a5)
    assert handout.count("<pre>") >= 2 and "requirements.lock" in handout
    assert "http://" not in handout and "https://" not in handout  # readable offline: nothing to fetch
    body = handout.split("<body>", 1)[1]
    assert "{" not in body.split("<h1", 1)[0], "style rules leaked into the page text"
    assert "white-space:pre-wrap" in handout.split("</style>", 1)[0]  # the long commands wrap, no sideways scroll
