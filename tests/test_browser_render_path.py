"""The panels' render path as the browser receives it, without a browser: the PNG bytes a slider move
sends, the PNGs a panel remembers for values it showed, and the debug timing benchmarks/bench_browser_slider.py
reads. (The round trip in Chromium itself is measured by that benchmark, never asserted on time here.)
"""

from __future__ import annotations

import asyncio
import io
import json
import zlib

import numpy as np
import pytest
from PIL import Image

from vnetlab.viz.style import DPI
from vnetlab.widgets import base, explorer, gropanels, rxpanels, stackpanels

# (panel factory, a slider control, two values in its range): one per panel in notebooks 10-50 that has a slider
SLIDERS = [
    (rxpanels.carving_panel, "avg_pkt_len", 0, 1600),
    (rxpanels.packet_panel, "payload_len", 1000, 1162),
    (rxpanels.window_panel, "buf_len", 1536, 2048),
    (gropanels.gro_panel, "payload_len", 1000, 1001),
    (stackpanels.cost_panel, "payload_len", 1000, 1100),
    (stackpanels.stack_panel, "gso_size", 1472, 1400),
    (stackpanels.router_panel, "gso_size", 1472, 1000),
]
IDS = [f"{make.__name__}.{control}" for make, control, *_ in SLIDERS]


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


@pytest.mark.parametrize("make", [rxpanels.packet_panel, stackpanels.stack_panel, explorer.explorer_panel,
                                  rxpanels.threshold_panel], ids=lambda m: m.__name__)
def test_png_is_the_canvas_pixels(make):
    """The PNG decodes (Pillow, an independent decoder) to exactly the pixels Agg drew; opaque figures go as RGB
    (PNG colour type 2, W3C PNG 2nd edition 11.2.2 IHDR), with the figure's dpi in pHYs."""
    p = make()
    canvas = base._draw(p.figure)
    drawn = np.asarray(canvas.buffer_rgba())
    # source: 255 is an opaque pixel's alpha in Agg's RGBA buffer (W3C PNG 11.2.2: RGB only when all are 255)
    assert (drawn[..., 3] == 255).all()
    assert np.array_equal(_pixels(p.png), drawn)
    im = Image.open(io.BytesIO(p.png))
    assert im.mode == "RGB" and im.size == (base.png_width(p.png), drawn.shape[0])
    assert round(im.info["dpi"][0]) == DPI
    assert p.png == base.render_png(p.figure)


def test_png_keeps_alpha_where_a_pixel_is_not_opaque():
    """A figure with a transparent background keeps its alpha channel (colour type 6)."""
    fig = base.new_figure(2.0, 1.0)
    fig.patch.set_alpha(0.0)
    canvas = base._draw(fig)
    png = base._encode_png(canvas)
    assert Image.open(io.BytesIO(png)).mode == "RGBA"
    assert np.array_equal(_pixels(png), np.asarray(canvas.buffer_rgba()))


def test_png_chunks_are_well_formed():
    """Every chunk's CRC matches (PNG 2nd edition 5.3: CRC-32 over type and data); IHDR first, IEND last."""
    png = rxpanels.carving_panel().png
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, tags = 8, []
    while pos < len(png):
        n = int.from_bytes(png[pos:pos + 4], "big")
        tag, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]
        assert int.from_bytes(png[pos + 8 + n:pos + 12 + n], "big") == zlib.crc32(tag + data), tag
        tags.append(tag)
        pos += 12 + n
    assert tags == [b"IHDR", b"pHYs", b"IDAT", b"IEND"]


class _Counted:
    """The panel's own state function, counting its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0
        self.__name__ = getattr(fn, "__name__", "state_fn")

    def __call__(self, **kw):
        self.calls += 1
        return self.fn(**kw)


@pytest.mark.parametrize("make, control, a, b", SLIDERS, ids=IDS)
def test_a_value_shown_before_is_answered_from_memory(make, control, a, b):
    """Back to a value: the same PNG and summary as a fresh panel at that value, without calling the model; the
    figure (and state) read afterwards is redrawn for that value, not the one drawn last."""
    p = make()
    p.controls[control].value = a
    png_a, text_a = p.png, p.message.value
    p.state_fn = counted = _Counted(p.state_fn)
    p.controls[control].value = b
    assert counted.calls == 1 and p.png != png_a
    p.controls[control].value = a
    assert counted.calls == 1, "the model ran again for a value the panel showed"
    assert p.png == png_a and p.message.value == text_a
    fresh = make()
    fresh.controls[control].value = a
    assert p.png == fresh.png
    assert base.render_png(p.figure) == fresh.png  # the figure caught up with what the PNG shows
    assert counted.calls == 2 and p.state.params == fresh.state.params
    png_b = p._shown[base._shown_key({**p.params(), control: b})][1]
    p.controls[control].value = b  # from memory again; the figure catches up when read
    assert counted.calls == 2 and p.png == png_b
    assert base.render_png(p.figure) == png_b and counted.calls == 3


def test_the_memory_is_bounded_and_errors_are_not_remembered():
    p = rxpanels.packet_panel()
    payload = p.controls["payload_len"]
    for v in range(900, 900 + base.SHOWN_CACHE + 5):
        payload.value = v
    assert len(p._shown) == base.SHOWN_CACHE
    payload.value = 5000  # beyond the slider: the model's error (udp payload above the MTU's room)
    assert p.error and p.png is None and p.image.layout.display == "none"
    payload.value = 5000
    assert p.error


def test_parameters_that_are_not_plain_values_are_never_remembered():
    assert base._shown_key({"n": 1, "x": 1.0, "on": True}) != base._shown_key({"n": 1, "x": 1, "on": 1})
    assert base._shown_key({"cmds": (("eth0", {"gso": False}),)}) is not None
    assert base._shown_key({"fig": object()}) is None


def test_debug_timing_writes_stamps_only_when_asked(tmp_path, monkeypatch):
    log = tmp_path / "timing.jsonl"
    p = rxpanels.packet_panel()
    monkeypatch.setattr(base, "TIMING_LOG", None)
    p.controls["payload_len"].value = 1001
    assert not log.exists()
    monkeypatch.setattr(base, "TIMING_LOG", str(log))
    p.controls["payload_len"].value = 1002
    p.controls["payload_len"].value = 1001  # shown before: answered from memory
    first, second = (json.loads(line) for line in log.read_text().splitlines())
    for rec in (first, second):
        t = rec["t"]
        assert list(t) == ["start", "state", "drawn", "encoded", "sent", "end"] == list(rec["cpu"])
        assert all(t[x] <= t[y] for x, y in zip(list(t), list(t)[1:]))
    assert first["params"]["payload_len"] == 1002 and not first["cached"] and second["cached"]


def test_a_slider_step_draws_the_next_step_ahead_when_the_kernel_is_idle():
    """In the kernel (an asyncio loop runs), a step right makes the panel draw one more step right after this
    update; the reader's next step is then answered from memory, with the PNG a fresh panel draws, and the
    figure read afterwards is the one shown. Outside a loop nothing is drawn ahead."""
    p = rxpanels.packet_panel()
    payload = p.controls["payload_len"]
    payload.value = 1001
    assert base._shown_key({**p.params(), "payload_len": 1002}) not in p._shown  # no loop: nothing ahead

    async def steps():
        p.state_fn = counted = _Counted(p.state_fn)
        payload.value = 1002  # one step right: drawn now, 1003 drawn when the loop is idle
        assert counted.calls == 1
        await asyncio.sleep(0)
        assert counted.calls == 2
        shown = p.png
        payload.value = 1003
        assert counted.calls == 2, "the step ahead was not remembered"
        await asyncio.sleep(0)  # and 1004 is drawn ahead in turn
        assert counted.calls == 3
        return shown, counted

    shown_1002, counted = asyncio.run(steps())
    fresh = rxpanels.packet_panel(payload_len=1003)
    assert p.png == fresh.png and p.message.value == fresh.message.value
    assert base.render_png(p.figure) == fresh.png  # the figure holds 1004; read, it is redrawn for 1003
    payload.value = 1002  # back: from memory
    assert p.png == shown_1002 and counted.calls == 4


def test_no_step_ahead_past_the_slider_end():
    async def steps():
        p = rxpanels.packet_panel()
        s = p.controls["payload_len"]
        p.state_fn = counted = _Counted(p.state_fn)
        s.value = s.max - 1
        await asyncio.sleep(0)
        s.value = s.max
        await asyncio.sleep(0)
        return counted.calls

    # max-1 is a jump (nothing drawn ahead: a drag or a typed value says nothing of the next one); max is a step,
    # and max+1 is past the slider's end
    assert asyncio.run(steps()) == 2


def test_panels_that_override_on_change_draw_ahead_too():
    """The stack panel (explorer.EthtoolPanel, its own _on_change) steps gso_size down: the next step is drawn."""
    async def steps():
        p = stackpanels.stack_panel()
        p.state_fn = counted = _Counted(p.state_fn)
        p.controls["gso_size"].value = 1471
        await asyncio.sleep(0)
        assert counted.calls == 2, "1470, the next step down, was not drawn ahead"
        p.controls["gso_size"].value = 1470
        return counted.calls

    assert asyncio.run(steps()) == 2  # 1470 came from memory


def test_an_explorer_toggle_draws_its_way_back_ahead():
    """Notebook 40's explorer: after a click on a feature's button, the click back (the same button again) is
    drawn while the kernel is idle; that click is then answered from memory with what a fresh explorer shows for
    the same ethtool -K history, and its own click back is drawn in turn."""
    async def clicks():
        p = explorer.explorer_panel()
        p.state_fn = counted = _Counted(p.state_fn)
        (dev, feature), button = next((k, t) for k, t in p.toggles.items() if not t.icon)  # not [fixed]
        button.value = not button.value  # ethtool -K <dev> <feature> off: drawn now
        assert counted.calls == 1
        await asyncio.sleep(0)
        assert counted.calls == 2, "the click back was not drawn ahead"
        button.value = not button.value  # back: from memory
        assert counted.calls == 2, "the click back was drawn again"
        shown = (p.png, p.message.value, list(p.commands))
        await asyncio.sleep(0)
        assert counted.calls == 3  # and the next click back
        return p, shown

    p, (png, text, commands) = asyncio.run(clicks())
    assert len(commands) == 2 and commands[0][0] == commands[1][0]
    fresh = explorer.explorer_state(**{**p.params(), "ethtool": tuple(commands)})
    assert png == base.render_png(fresh.figure) and text == fresh.text


def test_a_refused_toggle_draws_nothing_ahead():
    async def click():
        p = explorer.explorer_panel()
        p.state_fn = counted = _Counted(p.state_fn)
        button = next(t for t in p.toggles.values() if t.icon == "lock")  # [fixed]: ethtool -K refuses it
        button.value = not button.value
        await asyncio.sleep(0)
        return counted.calls, p.commands

    calls, commands = asyncio.run(click())
    assert calls == 1 and commands == []


def _prefetched(make, monkeypatch, turns: int = 50, prefetch: bool = True):
    """A panel made inside a running loop, after ``turns`` idle loop turns (PREFETCH_DELAY_S set to 0)."""
    monkeypatch.setattr(base, "PREFETCH_DELAY_S", 0.0)
    monkeypatch.setattr(base, "PREFETCH", prefetch)

    async def made():
        p = make()
        for _ in range(turns):
            await asyncio.sleep(0)
        return p

    return asyncio.run(made())


def test_a_panel_just_shown_draws_the_first_steps_while_idle(monkeypatch):
    """Each integer slider one step either way and each checkbox flipped are remembered before the reader acts:
    the first step is then answered from memory with what a fresh panel draws for it."""
    p = _prefetched(rxpanels.packet_panel, monkeypatch)
    p.state_fn = counted = _Counted(p.state_fn)
    sliders = [n for n, c in p.controls.items() if isinstance(c, base.SizeSlider | base.W.IntSlider)]
    boxes = [n for n, c in p.controls.items() if isinstance(c, base.W.Checkbox)]
    assert sliders
    for name in sliders:
        c = p.controls[name]
        for v in (c.value + c.step, c.value - c.step):
            if c.min <= v <= c.max:
                assert base._shown_key({**p.params(), name: v}) in p._shown, (name, v)
    for name in boxes:
        assert base._shown_key({**p.params(), name: not p.controls[name].value}) in p._shown, name
    name = sliders[0]
    start = p.controls[name].value
    p.controls[name].value = start + p.controls[name].step
    assert counted.calls == 0, "the first step was drawn on demand"
    fresh = rxpanels.packet_panel(**{name: start + p.controls[name].step})
    assert p.png == fresh.png and p.message.value == fresh.message.value


def test_a_hub_draws_no_first_steps(monkeypatch):
    """On a workshop hub (VNETLAB_HOSTED, deploy/jupyterhub_config.py) nothing is drawn that nobody asked for."""
    p = _prefetched(rxpanels.packet_panel, monkeypatch, prefetch=False)
    assert len(p._shown) == 1  # what it shows
    import subprocess
    import sys

    hosted = subprocess.run([sys.executable, "-c", "import vnetlab.widgets.base as b; print(b.PREFETCH)"],
                            env={**__import__("os").environ, "VNETLAB_HOSTED": "jupyterhub"},
                            capture_output=True, text=True, check=True)
    assert hosted.stdout.strip() == "False"
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    assert '"VNETLAB_HOSTED": "jupyterhub"' in (root / "deploy" / "jupyterhub_config.py").read_text()
    assert "VNETLAB_HOSTED: jupyterhub" in (root / "deploy" / "k8s" / "values.yaml").read_text()


def test_the_first_steps_stop_once_the_reader_acts(monkeypatch):
    monkeypatch.setattr(base, "PREFETCH_DELAY_S", 0.0)
    monkeypatch.setattr(base, "PREFETCH", True)

    async def run():
        p = rxpanels.packet_panel()
        p.state_fn = counted = _Counted(p.state_fn)
        c = p.controls["payload_len"]
        c.value = c.value + 500  # a jump before anything was drawn ahead: one drawing, nothing ahead of it
        for _ in range(20):
            await asyncio.sleep(0)
        return counted.calls

    assert asyncio.run(run()) == 1


def test_an_update_and_a_drawing_ahead_on_two_threads_never_mix_figures():
    """Widget messages run on a kernel subshell's thread while the first steps are drawn on the main one: the
    panel's lock keeps each PNG the figure of its own parameters (Pillow-decoded pixels equal a fresh panel's)."""
    import threading

    p = rxpanels.packet_panel()
    c = p.controls["payload_len"]
    values = [c.value + 3 * i for i in range(1, 9)]
    ahead = [{**p.params(), "payload_len": v + 1} for v in values]
    errors: list[BaseException] = []

    def draw_ahead():
        try:
            for params in ahead:
                p._draw_for_later(params, base._shown_key(params))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    t = threading.Thread(target=draw_ahead)
    t.start()
    shown = []
    for v in values:
        c.value = v
        shown.append((v, p.png))
    t.join()
    assert not errors
    for v, png in shown:
        assert png == rxpanels.packet_panel(payload_len=v).png, v
    for params in ahead:
        png = p._shown[base._shown_key(params)][1]
        assert png == rxpanels.packet_panel(payload_len=params["payload_len"]).png, params["payload_len"]


# ethtool -K histories on notebook 40's default stack (6.1, VLAN on the router NIC): pairs that end in the same
# features and pairs that do not (Device.ethtool_K; "[requested on]" keeps a request in wanted_features)
_SG_OFF = ("eth0.10", {"tx-scatter-gather": False})
_SG_ON = ("eth0.10", {"tx-scatter-gather": True})
_CSUM_OFF = ("eth0", {"tx-checksum-ip-generic": False})
_CSUM_ON = ("eth0", {"tx-checksum-ip-generic": True})
_SAME = [((), (_SG_OFF, _SG_ON)), ((_CSUM_OFF,), (_SG_OFF, _CSUM_OFF, _SG_ON)), ((), (_SG_OFF, _SG_ON) * 2)]
_DIFFERENT = [((), (_SG_OFF,)), ((_CSUM_OFF,), ()), ((_SG_OFF,), (_CSUM_OFF,))]


@pytest.mark.parametrize("a, b", _SAME + _DIFFERENT, ids=[f"same{i}" for i in range(len(_SAME))]
                         + [f"different{i}" for i in range(len(_DIFFERENT))])
def test_the_explorer_drawing_key_says_when_two_histories_draw_the_same_figure(a, b):
    """Equal keys must mean equal pixels, rendered fresh for each history (not from the panel's memory); the
    pairs that end in different features get different keys and draw different figures."""
    base_params = explorer.explorer_panel().params()
    pa, pb = ({**base_params, "ethtool": h} for h in (a, b))
    png_a, png_b = (base.render_png(explorer.explorer_state(**p).figure) for p in (pa, pb))
    same = explorer.drawing_key(pa) == explorer.drawing_key(pb)
    assert same == ((a, b) in _SAME)
    assert (png_a == png_b) == same


def test_equal_explorer_drawing_keys_draw_equal_pixels_over_random_histories():
    """A sample of ethtool -K histories on two stacks (seeded): wherever two keys are equal, so are the PNGs."""
    import random

    rng = random.Random(20)
    names = [("eth0.10", "tx-scatter-gather"), ("eth0", "tx-checksum-ip-generic"), ("eth0", "tx-scatter-gather"),
             ("eth0.10", "tx-tcp-segmentation"), ("eth0", "tx-udp-segmentation")]
    repeats = 0
    for upper in ("vlan", "macvlan"):
        params = explorer.explorer_panel(upper=upper).params()
        by_key: dict = {}
        for _ in range(12):
            hist = tuple((d.replace("eth0.10", "eth0.10" if upper == "vlan" else "mv0"), {f: rng.random() < 0.5})
                         for d, f in rng.choices(names, k=rng.randint(0, 4)))
            p = {**params, "ethtool": hist}
            key = explorer.drawing_key(p)
            if key is None:
                continue
            png = base.render_png(explorer.explorer_state(**p).figure)
            repeats += key in by_key
            assert by_key.setdefault(key, png) == png, hist
    assert repeats >= 5  # the sample does reach the same features by different histories

def test_a_toggle_back_reuses_the_pixels_of_the_same_features():
    """In the panel: clicking a feature off and on again ends in the features it started from; the PNG drawn
    then is the one shown at the start (no Agg drawing), and the message still lists both commands."""
    p = explorer.explorer_panel()
    start = p.png
    (dev, feature), button = next((k, t) for k, t in p.toggles.items() if not t.icon)
    drawn = []
    real = base._draw
    base._draw = lambda fig: drawn.append(fig) or real(fig)
    try:
        button.value = not button.value
        button.value = not button.value
    finally:
        base._draw = real
    assert len(drawn) == 1, "the figure of the starting features was drawn again"
    assert p.png == start and p.message.value.count("ethtool -K") == 2
