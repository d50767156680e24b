"""Values the browser sends through the widget comm that a panel control cannot hold.

JupyterLab sends a control's new value as a comm message, ``{"method": "update", "state": {...}}``, which
ipywidgets' ``Widget._handle_msg`` hands to ``set_state`` before any panel code runs. Measured before the panels
guarded it (ipywidgets 8.1.9, ipykernel 7.4, the GRO panel in a real kernel): a string or None in a number box, an
option index past the list and a string in a checkbox raised TraitError inside the comm handler (an ``error``
message on iopub that no cell shows, the browser keeping the value the kernel never took, the figure stale); 3.7
in the packets box became 3 and "12" became 12 without a word; 100000 on the slider became its end (128); index
None emptied the L4 dropdown; 1 in the UDP_GRO checkbox became True.

Every control of every panel now refuses such a value: the panel's message says which control, what arrived and
what the control takes (vnetlab.checks' wording, with the range the panel's state function declares: its
``Annotated[int, In(...)]`` parameters), the browser's widget is sent back its value (an ``update``, no echo), the
figure and the parameters stay those of the controls shown, and nothing reaches the kernel log. The messages are
built as a browser builds them and handed to ``_handle_msg``; the widgets talk through a comm that records what the
kernel sends (``comm.create_comm``, the hook ipykernel itself fills), and one test runs a real ipykernel and sends
the same messages on its shell channel, as JupyterLab does. Last, every control of every panel, moved from where
the panel starts, still changes the figure or the summary, or says why not, or is disabled or hidden.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from typing import Any

import comm
import ipywidgets as W
import matplotlib
import pytest
from comm.base_comm import BaseComm

matplotlib.use("Agg")

from vnetlab.widgets import explorer, gropanels, rxpanels, stackpanels  # noqa: E402
from vnetlab.widgets.base import Panel, SizeSlider  # noqa: E402

# Every panel the widgets modules offer (test_every_panel_is_here keeps the list whole).
PANELS = {
    "packet_panel": rxpanels.packet_panel, "buffer_panel": rxpanels.buffer_panel, "skb_panel": rxpanels.skb_panel,
    "paths_panel": rxpanels.paths_panel, "threshold_panel": rxpanels.threshold_panel,
    "window_panel": rxpanels.window_panel, "carving_panel": rxpanels.carving_panel, "gro_panel": gropanels.gro_panel,
    "stack_panel": stackpanels.stack_panel, "router_panel": stackpanels.router_panel,
    "cost_panel": stackpanels.cost_panel, "explorer_panel": explorer.explorer_panel,
}

# What each swept size takes, as its panel's state function declares it (an independent copy: the numbers from
# the kernel). IP_MAX_MTU 65535 (include/net/ip.h), ETH_MIN_MTU 68 (include/uapi/linux/if_ether.h); a flow of at
# most one receive ring, QEMU's VIRTIO_NET_RX_QUEUE_DEFAULT_SIZE 256 (hw/net/virtio-net.c); UDP_GRO_CNT_MAX 64
# (net/ipv4/udp_offload.c); gso_size at most 65535 - iphdr 20 - udphdr 8 (include/uapi/linux/udp.h).
SIZE_RANGES = {
    "payload_len": "an int in 0..65535 (L4 payload bytes)",
    "mtu": "an int in 68..65535 (the device MTU, ETH_MIN_MTU..IP_MAX_MTU)",
    "n_packets": "an int in 1..256 (packets of one flow, at most one virtio-net receive ring",
    "segs": "an int in 1..64 (packets one UDP GRO skb holds (UDP_GRO_CNT_MAX))",
    "gso_size": "an int in 1..65507 (UDP payload bytes per segment (gso_size))",
    "avg_pkt_len": "an int >= 0 (EWMA of received packet lengths in bytes (rq->mrg_avg_pkt_len)",
    ("window_panel", "buf_len"): "an int >= 1 (mergeable buffer truesize in bytes, at most one page frag)",
    "buf_len": "an int >= 0 (mergeable buffer truesize in bytes, 0 = as the driver carves it)",
}


class RecordingComm(BaseComm):
    """A comm that keeps what the kernel side sends (ipykernel's Comm sends it on iopub)."""

    def __init__(self, **kwargs: Any) -> None:  # noqa: ANN401
        self.sent: list[dict[str, Any]] = []
        super().__init__(**kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None,  # noqa: ANN401
                    **keys: Any) -> None:  # noqa: ANN401
        if msg_type == "comm_msg":
            self.sent.append(data)


@pytest.fixture(autouse=True)
def recording_comms(monkeypatch):
    monkeypatch.setattr(comm, "create_comm", lambda *a, **kw: RecordingComm(**kw))


def update(state: dict[str, Any]) -> dict[str, Any]:
    """The comm message a browser sends when the reader changes a control."""
    return {"content": {"data": {"method": "update", "state": state, "buffer_paths": []}}, "buffers": []}


def expected_range(panel_name: str, panel: Panel, name: str, widget: W.Widget) -> str:
    """What the refusal must say the control takes."""
    control = panel.controls.get(name)
    if isinstance(control, SizeSlider):
        return SIZE_RANGES.get((panel_name, name), SIZE_RANGES[name])
    if isinstance(widget, W.FloatSlider):
        return f"a number in {widget.min}..{widget.max} (ns per operation"
    if isinstance(widget, W.Checkbox | W.ToggleButton):
        return "a bool (True/False)"
    return f"an int in 0..{len(widget.options) - 1} (the position of an option: 0 "


def bad_values(panel: Panel, name: str) -> list[tuple[W.Widget, str, Any]]:
    """(widget the browser talks to, synced trait, a value it cannot hold) for one control."""
    c = panel.controls[name]
    if isinstance(c, SizeSlider):
        return [(c.readout, "value", v) for v in ("abc", None, 3.7, True, "12", 1e3)] + \
               [(c.slider, "value", v) for v in (3.7, None, "5", False)]
    if isinstance(c, W.FloatSlider):
        return [(c, "value", v) for v in ("abc", None, True, c.min - 1.0, c.max * 10 + 1.0)]
    if isinstance(c, W.Checkbox | W.ToggleButton):
        return [(c, "value", v) for v in ("yes", 1, 0, None)]
    n = len(c.options)
    return [(c, "index", v) for v in (n, -1, None, "0", 1.0, True)]


def label(panel: Panel, name: str) -> str:
    c = panel.controls[name]
    return c.description if isinstance(c, SizeSlider) else c.description or name


def test_every_panel_is_here():
    offered = {n for mod in (rxpanels, gropanels, stackpanels, explorer) for n in mod.__all__ if n.endswith("_panel")}
    assert offered == set(PANELS)


def test_every_swept_size_declares_its_kernel_range():
    """The range a refusal names is the state function's own: every SizeSlider's parameter carries an In."""
    for panel_name, make in PANELS.items():
        p = make()
        for name, c in p.controls.items():
            if isinstance(c, SizeSlider):
                rng = p.declared_range(name)
                assert rng is not None, (panel_name, name)
                assert (f"an int {rng.phrase()} ({rng.meaning}").startswith(
                    SIZE_RANGES.get((panel_name, name), SIZE_RANGES[name])[:30]), (panel_name, name)


@pytest.mark.parametrize("panel_name", list(PANELS))
def test_a_value_no_control_can_hold_is_refused_and_snaps_back(panel_name, caplog):
    p = PANELS[panel_name]()
    assert p.error is None
    problems = []
    targets = [(name, w, key, v) for name in p.controls for w, key, v in bad_values(p, name)]
    if isinstance(p, explorer.EthtoolPanel):
        targets += [(None, t, "value", v) for t in p.toggles.values() for v in ("on", 1, None)]
    body = p.message.value  # the summary, which every refusal keeps below its own line
    for name, widget, key, value in targets:
        before = (p.params(), p.png, p.image.value, p.state.params if p.state else None)
        widget.comm.sent.clear()
        with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG):
            warnings.simplefilter("always")
            caplog.clear()
            widget._handle_msg(update({key: value}))
        where = f"{name or 'toggle'} {key}={value!r}"
        if caught or caplog.records:
            problems.append(f"{where}: in the kernel log: {(caught or caplog.records)[0]}")
            continue
        if (p.params(), p.png, p.image.value, p.state.params if p.state else None) != before:
            problems.append(f"{where}: the controls or the figure changed")
        text = p.comm_refusal or ""
        who = label(p, name) if name else "ethtool -K "
        want = expected_range(panel_name, p, name, widget) if name else "a bool (True/False)"
        if not (who in text and f"got {value!r}" in text and want in text):
            problems.append(f"{where}: the panel says {text!r}; wanted {who!r}, {value!r} and {want!r}")
        if not p.message.value.startswith('<span style="color:#a33b00">Refused from the browser') \
                or not p.message.value.endswith(body):
            problems.append(f"{where}: the message shows {p.message.value[:120]!r}")
        sent = widget.comm.sent
        if sent != [{"method": "update", "state": {key: getattr(widget, key)}, "buffer_paths": []}]:
            problems.append(f"{where}: the browser was sent {sent!r}, not the value the figure shows")
    assert not problems, f"{panel_name}: {len(problems)} of {len(targets)}:\n" + "\n".join(problems[:20])


@pytest.mark.parametrize("panel_name", [n for n in PANELS if n not in ("threshold_panel", "explorer_panel")])
def test_an_int_beyond_the_slider_is_taken_as_typed(panel_name):
    """An int past a slider's track is what the number box beside it takes: the model judges it (ipywidgets
    clamped it to the track's end without a word). The slider is sent its end."""
    p = PANELS[panel_name]()
    for name, c in p.controls.items():
        if not isinstance(c, SizeSlider) or c.slider.disabled:
            continue
        beyond = c.slider.max + c.slider.step
        c.slider.comm.sent.clear()
        c.slider._handle_msg(update({"value": beyond}))
        assert c.value == beyond and c.readout.value == beyond and p.comm_refusal is None, (name, p.comm_refusal)
        assert c.slider.comm.sent[-1]["state"] == {"value": c.slider.value}
        # the panel draws it or says, naming the control, why the model refuses it
        assert (p.error is None and p.state.params[name] == beyond) or (name in p.error and p.png is None), name
        c.readout._handle_msg(update({"value": c.slider.min}))
        assert p.error is None and p.state.params[name] == c.slider.min


def test_the_next_good_value_clears_the_refusal():
    p = gropanels.gro_panel()
    p.controls["n_packets"].readout._handle_msg(update({"value": "abc"}))
    assert p.comm_refusal and "Refused from the browser" in p.summary()
    p.controls["n_packets"].readout._handle_msg(update({"value": 10}))
    assert p.comm_refusal is None and "Refused" not in p.summary() and p.state.params["n_packets"] == 10


def test_a_refusal_over_the_models_refusal_keeps_both():
    """A typed value the model refuses hides the figure; a browser value refused after it keeps that message."""
    p = gropanels.gro_panel()
    p.controls["n_packets"].readout._handle_msg(update({"value": 0}))
    assert p.png is None and "n_packets must be an int in 1..256" in p.error
    p.controls["l4"]._handle_msg(update({"index": 9}))
    assert "got 9" in p.comm_refusal and p.error in p.summary() and p.image.layout.display == "none"


# -- the same messages through a real kernel -------------------------------------------------------------------

KERNEL_SETUP = """
import json, hashlib, matplotlib
matplotlib.use("Agg")
from vnetlab.widgets import explorer, gropanels, rxpanels, stackpanels
from vnetlab.widgets.base import SizeSlider
panels = {name: getattr(mod, name)() for mod, names in GROUPS for name in names}
def parts(p):
    for name, c in p.controls.items():
        for part, w in ((("readout", c.readout), ("slider", c.slider)) if isinstance(c, SizeSlider) else (("", c),)):
            yield name, part, w
def look(name):
    p = panels[name]
    return json.dumps({"params": repr(p.params()), "png": hashlib.sha1(p.png or b"").hexdigest(),
                       "refusal": p.comm_refusal, "error": p.error})
"""

BAD = {"readout": "abc", "slider": 3.7}  # per SizeSlider part; else by widget kind below


@pytest.fixture(scope="module")
def kernel():
    jupyter_client = pytest.importorskip("jupyter_client")
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _iopub_until_idle(kc, msg_id: str) -> list[dict[str, Any]]:
    got = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        m = kc.get_iopub_msg(timeout=120)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return got
        got.append(m)
    raise AssertionError(f"the kernel did not answer {msg_id}")


def _run(kc, code: str) -> str:
    msg_id = kc.execute(code)
    out = _iopub_until_idle(kc, msg_id)
    errors = [m["content"] for m in out if m["msg_type"] == "error"]
    assert not errors, errors
    return "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")


def test_a_real_kernel_refuses_every_controls_bad_value_without_a_traceback(kernel):
    """JupyterLab's comm_msg on the shell channel, to every control of every panel built in a real ipykernel: no
    ``error`` or stderr on iopub, an ``update`` carrying the kernel's value back, and the panel unchanged but for
    the message naming the control."""
    groups = ", ".join(f"({m.__name__.rsplit('.', 1)[1]}, {[n for n in PANELS if n in m.__all__]!r})"
                       for m in (rxpanels, gropanels, stackpanels, explorer))
    _run(kernel, KERNEL_SETUP.replace("GROUPS", f"[{groups}]"))
    widgets = json.loads(_run(kernel, "print(json.dumps([(p, n, part, w.model_id, type(w).__name__, "
                                      "len(getattr(w, 'options', ()))) for p in panels for n, part, w in "
                                      "parts(panels[p])]))"))
    problems = []
    for panel_name, name, part, model_id, kind, n_options in widgets:
        before = json.loads(_run(kernel, f"print(look({panel_name!r}))"))
        if part:
            key, value = "value", BAD[part]
        elif kind in ("Checkbox", "ToggleButton"):
            key, value = "value", "yes"
        elif kind == "FloatSlider":
            key, value = "value", None
        else:
            key, value = "index", n_options
        msg = kernel.session.msg("comm_msg", {"comm_id": model_id, "data": {"method": "update",
                                                                              "state": {key: value},
                                                                              "buffer_paths": []}})
        kernel.shell_channel.send(msg)
        out = _iopub_until_idle(kernel, msg["header"]["msg_id"])
        where = f"{panel_name} {name} {part or kind} {key}={value!r}"
        leaked = [m["content"] for m in out if m["msg_type"] == "error"
                  or (m["msg_type"] == "stream" and m["content"]["name"] == "stderr")]
        if leaked:
            problems.append(f"{where}: in the kernel log: {str(leaked[0])[:200]}")
            continue
        back = [m["content"]["data"] for m in out if m["msg_type"] == "comm_msg"
                and m["content"]["comm_id"] == model_id]
        if [d["method"] for d in back] != ["update"] or list(back[0]["state"]) != [key]:
            problems.append(f"{where}: the browser was sent {back!r}")
        after = json.loads(_run(kernel, f"print(look({panel_name!r}))"))
        if (after["params"], after["png"], after["error"]) != (before["params"], before["png"], before["error"]):
            problems.append(f"{where}: the panel changed: {before} -> {after}")
        said = after["refusal"] or ""
        if f"{name} must be" not in said or f"got {value!r}" not in said:
            problems.append(f"{where}: the panel says {after['refusal']!r}")
    assert len(widgets) > 50 and not problems, f"{len(problems)} of {len(widgets)}:\n" + "\n".join(problems[:20])


# -- controls that change nothing ---------------------------------------------------------------------------


def _alternatives(c: W.Widget) -> list[Any]:
    """Other values a reader can give a control: a slider's ends and middle, every option, the other tick."""
    if isinstance(c, SizeSlider):
        s = c.slider
        vs = [s.min, (s.min + s.max) // 2 // s.step * s.step, s.max]
    elif isinstance(c, W.FloatSlider):
        vs = [c.min, c.max]
    elif isinstance(c, W.Checkbox | W.ToggleButton):
        vs = [not c.value]
    else:
        vs = [o[1] if isinstance(o, tuple) else o for o in c.options]
    return [v for v in vs if v != c.value]


@pytest.mark.parametrize("panel_name", list(PANELS))
def test_every_control_changes_the_figure_or_says_why(panel_name):
    """From the panel as first shown, every other value of every control changes the figure or the summary (a
    note saying why it does nothing counts), or the control is disabled or hidden there; the guard on browser
    values leaves every control working."""
    p = PANELS[panel_name]()
    home = {n: c.value for n, c in p.controls.items()}
    inert = []
    for name, c in p.controls.items():
        for v in _alternatives(c):
            with p.hold():
                for n, hv in home.items():
                    p.controls[n].value = hv
            p.update()
            shown = (p.png, p.summary())
            c.value = v
            part = c.slider if isinstance(c, SizeSlider) else c
            if p.error is None and (p.png, p.summary()) == shown and c.value == v \
                    and not part.disabled and c.layout.display != "none":
                inert.append(f"{name}={v!r}")
    assert not inert, f"{panel_name}: these change nothing and say nothing: {inert}"
