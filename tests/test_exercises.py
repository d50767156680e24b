"""Every exercise's model answer passes its checker; wrong answers do not."""

import pytest

from vnetlab import exercises

EXPECTED = {  # the values the kernel gives, as the issues and kernel-facts state them
    "00.1": 21.1, "10.1": 482, "10.2": 1792, "10.3": 2176, "20.1": 1674, "20.2": 1140, "20.3": 0.048,
    "30.1": 18, "30.2": 9, "30.3": 0.0, "40.1": [16, 18, 19, 20, 30, 33, 34], "40.2": [16, 18, 19, 20, 30],
    "40.3": False,
}


@pytest.mark.parametrize("key", list(exercises.EXERCISES))
def test_solution_passes_its_checker(key):
    verdict = exercises.check(key, exercises.solution(key))
    assert verdict and repr(verdict).startswith("✓")


@pytest.mark.parametrize("key, value", EXPECTED.items())
def test_solutions_match_the_kernel_numbers(key, value):
    assert exercises.check(key, value)


def test_wrong_answer_gets_a_hint():
    verdict = exercises.check("10.1", 481)
    assert not verdict and "✗" in repr(verdict) and "Hint" in repr(verdict)


def test_router_exercises():
    # 5.10: the VLAN lacks GSO_FRAGLIST; 6.1 on virtio_net: the VLAN lacks NETIF_F_FRAGLIST (skb_gso_ok).
    assert exercises.solution("50.1") == "eth0.10"
    assert exercises.solution("50.2") == "eth0.10"
    assert exercises._router("6.1", "router", "fraglist") is None
    assert exercises.solution("50.3") == 44


def test_unknown_exercise():
    with pytest.raises(ValueError, match="exercise '9.9' does not exist"):
        exercises.check("9.9", 1)
