"""The package palette survives colour blindness: colours that tell outcomes apart stay apart under a simulation of
deuteranopia and protanopia (and tritanopia), and page_to_skb()'s paths differ by hatch as well.

Simulation: Machado, Oliveira & Fernandes, "A Physiologically-based Model for Simulation of Color Vision
Deficiency", IEEE TVCG 15(6) 2009, severity 1.0 matrices, applied in linear sRGB; distance: CIE76 ΔE in CIELAB
(D65). ΔE 30 is a clearly visible difference; the earlier palette had copy+frag (#fd8d3c) and build_skb
(#31a354) 16 apart under protanopia and copy/copy+frag 13 apart under deuteranopia.
"""

import itertools

import numpy as np
import pytest

from vnetlab.viz import style

MACHADO = {
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
MIN_DELTA_E = 30.0


def _linear(hex_color):
    c = np.array([int(hex_color.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4)]) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(lin):
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a, b, deficiency=None):
    la, lb = _linear(a), _linear(b)
    if deficiency:
        la, lb = np.clip(MACHADO[deficiency] @ la, 0, 1), np.clip(MACHADO[deficiency] @ lb, 0, 1)
    return float(np.linalg.norm(_lab(la) - _lab(lb)))


def test_simulation_sees_the_old_problem():
    """The check can fail: the old orange/green pair is under the bound for a red-green deficiency."""
    old = {"copy": "#e6550d", "copy+frag": "#fd8d3c", "build_skb": "#31a354"}
    assert min(delta_e(a, b, "protanopia") for a, b in itertools.combinations(old.values(), 2)) < MIN_DELTA_E
    # ... and tells real colours apart. source: CIE76 between sRGB red Lab (53.2, 80.1, 67.2) and green
    # (87.7, -86.2, 83.2) (IEC 61966-2-1, D65) is 170.6
    assert delta_e("#ff0000", "#00ff00") > 80


GROUPS = {
    "paths": style.PATH_COLORS,
    "verdict": {"pass": style.PASS_COLOR, "fail": style.FAIL_COLOR},
    "segmentation": {"segmented": style.COLORS["segmented"], "passed": style.COLORS["passed"]},
}


@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("deficiency", [None, "deuteranopia", "protanopia", "tritanopia"])
def test_outcome_colours_stay_apart(group, deficiency):
    for (na, a), (nb, b) in itertools.combinations(GROUPS[group].items(), 2):
        d = delta_e(a, b, deficiency)
        assert d >= MIN_DELTA_E, f"{group}: {na} {a} vs {nb} {b}: ΔE {d:.1f} under {deficiency or 'normal vision'}"


def test_paths_also_differ_by_hatch_and_keep_keys():
    assert set(style.PATH_HATCHES) == set(style.PATH_COLORS) == {"copy", "copy+frag", "build_skb"}
    assert len(set(style.PATH_HATCHES.values())) == 3
    # COLORS keys other modules use (viz-tx: stacks, costfig) stay
    assert {"page", "headroom", "linear", "frag", "frag_list", "skb_shared_info", "sk_buff", "copy", "copy+frag",
            "build_skb", "segmented", "passed", "model", "measured"} <= set(style.COLORS)


def test_category_colours_distinct_for_red_green_deficiencies():
    """Kernel bars (grofig.draw_packets_per_skb) use the first colours of CATEGORY_COLORS side by side."""
    first = style.CATEGORY_COLORS[:4]
    for deficiency in ("deuteranopia", "protanopia"):
        assert min(delta_e(a, b, deficiency) for a, b in itertools.combinations(first, 2)) >= 15
