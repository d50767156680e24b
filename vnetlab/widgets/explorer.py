"""The device-stack explorer (notebook 40): pick a kernel, a lower device and a stack, toggle features with
``ethtool -K`` per device, and read the per-device feature grid and where two GSO skbs are segmented.

``explorer_state(**params)`` is a plain function (tested without a frontend) returning a PanelState whose
``result`` is a vnetlab.viz.featuregrid.FeatureGrid; ``explorer_panel(**initial)`` wraps it in a panel with one
toggle button per (device, feature). A fixed feature refuses as ``ethtool -K`` does (netdev raises
FixedFeatureError): the panel shows the refusal and the toggle springs back; the grid is unchanged.
"""

from __future__ import annotations

import html
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import ipywidgets as W
from matplotlib.figure import Figure

from vnetlab.checks import public
from vnetlab.errors import FixedFeatureError
from vnetlab.profiles import DEFAULT_KERNEL
from vnetlab.viz import featuregrid, stacks
from vnetlab.widgets.base import Panel, PanelState, choice

__all__ = ["EXPLORER_KERNELS", "EthtoolCommand", "apply_ethtool", "drawing_key", "refusal_html", "explorer_state",
           "EthtoolPanel", "explorer_panel"]

# Before and after 2e4ef10f5850 (v5.11), the workbook's reference kernel and the newest profile.
EXPLORER_KERNELS = ("5.10", "5.11", "6.1", "6.18")

# One ``ethtool -K <device> <name> on|off ...`` command: (device name, {ethtool name: on}).
EthtoolCommand = tuple[str, Mapping[str, bool]]


def _command_text(dev: str, settings: Mapping[str, bool]) -> str:
    return f"ethtool -K {dev} " + " ".join(f"{n} {'on' if v else 'off'}" for n, v in settings.items())


@public
def apply_ethtool(stack: stacks.Stack, commands: Sequence[EthtoolCommand]) -> tuple[list[str], list[tuple[str, str]]]:
    """Run ``ethtool -K`` commands in order (Device.ethtool_K). Returns (applied command texts, refused
    (command text, error text)): a command touching a fixed feature is refused whole and changes nothing."""
    refused: list[tuple[str, str]] = []
    applied: list[str] = []
    for command in commands:
        if not (isinstance(command, Sequence) and len(command) == 2 and isinstance(command[1], Mapping)):
            raise ValueError(f"each ethtool command is (device name, {{ethtool name: on}}), got {command!r}")
        dev_name, settings = command
        if dev_name not in stack.net.devices:
            raise ValueError(f"ethtool names device {dev_name!r}; this stack has "
                             f"{', '.join(d.name for d in stack.devices())}")
        cmd = _command_text(dev_name, settings)
        try:
            stack.net.devices[dev_name].ethtool_K(dict(settings))
        except FixedFeatureError as exc:
            refused.append((cmd, str(exc)))
            continue
        applied.append(cmd)
    return applied, refused


@public
def drawing_key(params: Mapping[str, Any]) -> Hashable | None:
    """What the explorer's figure shows for ``params`` (explorer_state's): the stack and skbs asked for and every
    device's feature sets after the ethtool -K commands (features, wanted, hw, vlan, hw_enc, mpls, gso_partial:
    all that Device.ethtool_K and the stacking change, and all that the grid and the skbs' walk read). Two
    command histories ending in the same features draw the same figure (EthtoolPanel's png_key); None where the
    parameters are refused."""
    try:
        stack = stacks.build_stack(kernel=params["kernel"], upper=params["upper"], nic=params["nic"])
        apply_ethtool(stack, params.get("ethtool", ()))
    except (ValueError, KeyError):
        return None
    devices = tuple((d.name, d.features, d.wanted_features, d.hw_features, d.vlan_features, d.hw_enc_features,
                     d.mpls_features, d.gso_partial_features) for d in stack.devices())
    return (params["kernel"], params["nic"], params["upper"], params.get("udp_segs"), params.get("fraglist_segs"),
            params.get("gso_size"), devices)


@public
def refusal_html(applied: Sequence[str], refused: Sequence[tuple[str, str]]) -> list[str]:
    """HTML lines: the commands applied, and each refusal in red with the error's text."""
    lines = []
    if applied:
        lines.append("applied: " + "; ".join(f"<code>{html.escape(c)}</code>" for c in applied))
    for cmd, err in refused:
        lines.append(f'<span style="color:#b42318">refused: <code>{html.escape(cmd)}</code>: '
                     f"{html.escape(err)}</span>")
    return lines


@public
def explorer_state(*, kernel: str = DEFAULT_KERNEL, nic: str = "router", upper: str = "vlan",
                   ethtool: Sequence[EthtoolCommand] = (), udp_segs: int = 17, fraglist_segs: int = 44,
                   gso_size: int = 1472, fig: Figure | None = None) -> PanelState:
    """Build ``upper`` on ``nic`` (keys of stacks.UPPERS / stacks.NICS) on ``kernel``, run the ``ethtool``
    commands in order (Device.ethtool_K), then send a UDP GSO skb and a fraglist GSO skb to the top device.

    A command that touches a fixed feature is refused whole and changes nothing, as ``ethtool -K`` fails; it is
    listed in ``extra["refused"]`` as (command text, error text) and shown in the text. ``result``: the
    FeatureGrid drawn."""
    stack = stacks.build_stack(kernel=kernel, upper=upper, nic=nic)
    applied, refused = apply_ethtool(stack, ethtool)
    grid = featuregrid.feature_grid(stack, udp_segs=udp_segs, fraglist_segs=fraglist_segs, gso_size=gso_size)
    figure = featuregrid.draw_feature_grid(grid, fig=fig)
    lines = []
    for key, (title, _fl) in featuregrid.SKB_KINDS.items():
        tx = grid.sent[key][1]
        lines.append(f"{title}: <b>{html.escape(stacks.wire_summary(tx))}</b>")
    lines += refusal_html(applied, refused)
    params = dict(kernel=kernel, nic=nic, upper=upper, ethtool=tuple((d, dict(s)) for d, s in ethtool),
                  udp_segs=udp_segs, fraglist_segs=fraglist_segs, gso_size=gso_size)
    return PanelState(params, figure, "<br>".join(lines), grid,
                      extra={"grid": grid, "refused": refused, "applied": applied})


class EthtoolPanel(Panel):
    """A panel whose state function takes ``ethtool`` commands and returns the stack's FeatureGrid in
    ``extra["grid"]``: a grid of toggle buttons, one per (device, feature), each click one ``ethtool -K`` command.
    Changing a ``structural`` control (kernel, NIC, stack) starts from fresh devices; a refused command (fixed
    feature) is dropped, its text shown, and the button springs back. """

    @public
    def __init__(self, state_fn: Any, controls: dict[str, W.ValueWidget], *,
                 structural: Sequence[str] = ("kernel", "nic", "upper"), rows: Sequence[Sequence[str]] | None = None,
                 constrain: Any = None, png_key: Any = None) -> None:  # noqa: ANN401
        self.commands: list[EthtoolCommand] = []
        self.toggles: dict[tuple[str, str], W.ToggleButton] = {}
        self._buttons: list[W.ToggleButton] = []
        self._labels: list[W.HTML] = []
        self.structural = tuple(structural)
        self._syncing = False
        self.toggle_box = W.GridBox()
        super().__init__(state_fn, controls, rows=rows, constrain=constrain, png_key=png_key)
        self.children = (*self.children[:-2], self.toggle_box, *self.children[-2:])
        self._rebuild_toggles()

    def params(self) -> dict[str, Any]:
        return {**super().params(), "ethtool": tuple(self.commands)}

    @public
    def update(self, *, sync: bool = True) -> PanelState | None:
        with self._lock:
            state = super().update()
            if sync and state is not None and self.toggles:
                self._sync_toggles(state.extra["grid"])
            return state

    def _on_change(self, change: dict[str, Any]) -> None:
        if any(change["owner"] is self.controls.get(n) for n in self.structural):
            self.commands = []
            self.update(sync=False)
            self._rebuild_toggles()
        else:
            self.update()

    def _rebuild_toggles(self) -> None:
        """One row per device of the current stack, one button per grid column (kernel's ethtool names). Widgets
        are pooled and relabelled (making ipywidgets is most of a stack change's time)."""
        # _state, not state: the grid shown is all this needs (reading state would redraw the figure when it
        # holds a state drawn ahead; Panel.state)
        grid = self._state.extra["grid"] if self._state is not None else None
        if grid is None:
            self.toggles = {}
            self.toggle_box.children = ()
            return
        if set(self.toggles) == {(r.name, c.feature) for r in grid.rows for c in r.cells}:
            self._sync_toggles(grid)
            return
        n_cols = len(grid.columns)
        n_buttons = n_cols * len(grid.rows)
        while len(self._buttons) < n_buttons:
            t = W.ToggleButton(value=False, layout=W.Layout(width="auto", height="28px"))
            t.observe(self._on_toggle, names="value")
            self._guard(t, lambda t=t: self._toggle_name(t))
            self._buttons.append(t)
        while len(self._labels) < 1 + n_cols + len(grid.rows):
            self._labels.append(W.HTML(layout=W.Layout(width="auto")))
        labels = iter(self._labels)
        buttons = iter(self._buttons)
        head = next(labels)
        head.value = "<b>ethtool -K</b>"
        cells: list[W.Widget] = [head]
        for c in grid.rows[0].cells:
            w = next(labels)
            w.value = (f'<div style="line-height:1.15;font-size:11px"><b>{c.feature.replace("_", "_<wbr>")}</b><br>'
                       f'{c.ethtool.replace("-", "-<wbr>")}</div>')
            cells.append(w)
        self.toggles = {}
        for row in grid.rows:
            w = next(labels)
            w.value = f"<b>{html.escape(row.name)}</b>"
            cells.append(w)
            for c in row.cells:
                t = next(buttons)
                self.toggles[(row.name, c.feature)] = t
                cells.append(t)
        self.toggle_box.children = tuple(cells)
        template = f"110px repeat({n_cols}, 84px)"
        if self.toggle_box.layout.grid_template_columns != template:
            self.toggle_box.layout = W.Layout(grid_template_columns=template, grid_gap="2px 4px",
                                              align_items="center")
        self._sync_toggles(grid)

    def _sync_toggles(self, grid: featuregrid.FeatureGrid) -> None:
        """Buttons := what ethtool -K last asked (wanted_features) for changeable features, the state for fixed
        ones; the label says on / off, a lock icon marks [fixed]."""
        self._syncing = True
        try:
            for row in grid.rows:
                for c in row.cells:
                    t = self.toggles.get((row.name, c.feature))
                    if t is None:
                        continue
                    value = c.on if c.fixed else (c.on or c.wanted)
                    tip = (f"{c.ethtool} is [fixed] on {row.name}: ethtool -K refuses to change it" if c.fixed
                           else f"ethtool -K {row.name} {c.ethtool} {'off' if value else 'on'}")
                    for name, v in (("value", value), ("description", "on" if value else "off"),
                                    ("icon", "lock" if c.fixed else ""), ("tooltip", tip)):
                        if getattr(t, name) != v:
                            setattr(t, name, v)
        finally:
            self._syncing = False

    def _toggle_name(self, toggle: W.ToggleButton) -> str:
        """'ethtool -K eth0 rx-gro-list': the command a toggle runs (what a refusal of a browser value names)."""
        key = next((k for k, t in self.toggles.items() if t is toggle), None)
        grid = self._state.extra["grid"] if self._state is not None else None
        if key is None or grid is None:
            return "ethtool -K toggle"
        eth = next((c.ethtool for c in grid.row(key[0]).cells if c.feature == key[1]), key[1])
        return f"ethtool -K {key[0]} {eth}"

    def _on_toggle(self, change: dict[str, Any]) -> None:
        key = next((k for k, t in self.toggles.items() if t is change["owner"]), None)
        if self._syncing or self._state is None or key is None:  # _state: as in _rebuild_toggles
            return
        dev, feature = key
        eth = next(c.ethtool for c in self._state.extra["grid"].row(dev).cells if c.feature == feature)
        cmd: EthtoolCommand = (dev, {eth: bool(change["new"])})
        self.commands.append(cmd)
        state = self.update()
        if state is None or any(r[0] == _command_text(*cmd) for r in state.extra["refused"]):
            self.commands.pop()  # ethtool -K failed: nothing changed, and the button springs back
            if state is not None:
                self._sync_toggles(state.extra["grid"])
            return
        # The likeliest next click is this button again (a reader turns a feature off, looks, turns it back on):
        # draw that state while the kernel is idle, as a slider draws its next step (Panel._ahead).
        back: EthtoolCommand = (dev, {eth: not self.toggles[key].value})
        self._ahead({**self.params(), "ethtool": (*self.commands, back)})


@public
def explorer_panel(*, kernel: str = DEFAULT_KERNEL, nic: str = "router", upper: str = "vlan") -> EthtoolPanel:
    """The device-stack explorer of notebook 40."""
    kernels = EXPLORER_KERNELS if kernel in EXPLORER_KERNELS else (*EXPLORER_KERNELS, kernel)
    controls = {
        "kernel": choice(kernel, kernels, "kernel"),
        "nic": choice(nic, [(label, key) for key, (label, *_r) in stacks.NICS.items()], "lower device"),
        "upper": choice(upper, [(key.replace("_", " "), key) for key in stacks.UPPERS], "stacked on it"),
    }
    return EthtoolPanel(explorer_state, controls, png_key=drawing_key)
