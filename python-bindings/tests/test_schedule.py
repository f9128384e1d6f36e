"""tessel.schedule(): the bubble fraction and the actions equal
tesselc --emit=schedule's."""

import re

import pytest

import tessel
from conftest import run_cli


def cli_bubble(tesselc, *flags):
    text = run_cli(tesselc, "--emit=schedule", *flags).stdout
    return float(re.search(r"^bubble_fraction: ([0-9.]+)$", text, re.M).group(1)), text


@pytest.mark.parametrize("name,stages,microbatches,chunks", [
    ("gpipe", 4, 8, 1), ("1f1b", 4, 8, 1), ("1f1b", 2, 4, 1),
    ("interleaved-1f1b", 4, 8, 2), ("zb-h1", 4, 8, 1)])
def test_bubble_fraction_equals_cli(name, stages, microbatches, chunks,
                                    tesselc):
    s = tessel.schedule(name, stages=stages, microbatches=microbatches,
                        chunks=chunks)
    cli, text = cli_bubble(tesselc, f"--schedule={name}", f"--stages={stages}",
                           f"--microbatches={microbatches}",
                           f"--chunks={chunks}")
    assert round(s.bubble_fraction, 4) == cli
    assert s.report() == text  # the whole report, action lists included
    assert s.stages == stages and s.microbatches == microbatches


def test_costs_change_the_bubble(tesselc):
    s = tessel.schedule("zb-h1", 4, 8, costs=(1, 2, 1), p2p_latency=0.5)
    cli, _ = cli_bubble(tesselc, "--schedule=zb-h1", "--stages=4",
                        "--microbatches=8", "--costs=1,2,1",
                        "--p2p-latency=0.5")
    assert round(s.bubble_fraction, 4) == cli
    assert s.bubble_fraction != tessel.schedule("zb-h1", 4, 8).bubble_fraction


def test_1f1b_known_bubble():
    # (p - 1) / (m + p - 1) for 1F1B with unit costs: 3/11.
    s = tessel.schedule("1f1b", stages=4, microbatches=8)
    assert s.bubble_fraction == pytest.approx(3 / 11, abs=1e-9)
    acts = s.actions(0)
    assert sum(1 for kind, _, _ in acts if kind.startswith("F")) == 8
    assert s.svg().lstrip().startswith("<svg") or "<svg" in s.svg()
    assert s._repr_svg_() == s.svg()


def test_bad_schedules_raise():
    with pytest.raises(tessel.ScheduleError, match="unknown schedule 'nope'"):
        tessel.schedule("nope", 4, 8)
    with pytest.raises(tessel.ScheduleError, match="stages must be at least 1"):
        tessel.schedule("1f1b", 0, 8)
    with pytest.raises(tessel.ScheduleError, match="rank 9"):
        tessel.schedule("1f1b", 4, 8).actions(9)
