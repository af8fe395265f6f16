"""The studies' one plotting helper: every figure has a title, and a y-axis left to
matplotlib starts at zero when its data are non-negative (1 % never fills a plot)."""

from __future__ import annotations

import pytest

from opendcn.experiments.plots import figure, save


def test_a_figure_is_titled_and_a_small_difference_stays_small(tmp_path):
    fig, (a, b, c, d) = figure(8, 3, 4)
    a.plot([0, 1], [0.90, 0.91])                 # autoscaled to 0.9..0.91: from zero now
    b.plot([0, 1], [0.90, 0.91])
    b.set_ylim(0.89, 0.92)                        # the plot chose its limits: kept
    c.plot([0, 1], [-1.0, 2.0])                   # negative data: left alone
    d.plot([0, 1], [10, 1000])
    d.set_yscale("log")                           # log scale: left alone
    save(fig, tmp_path / "x.png", title="what it shows")
    assert (tmp_path / "x.png").read_bytes()[:4] == b"\x89PNG"
    assert fig._suptitle is not None and fig._suptitle.get_text() == "what it shows"
    assert a.get_ylim()[0] == 0 and a.get_ylim()[1] >= 0.91
    assert b.get_ylim() == pytest.approx((0.89, 0.92))
    assert c.get_ylim()[0] < -1.0
    assert d.get_ylim()[0] > 0


def test_a_title_is_required(tmp_path):
    fig, ax = figure(3, 2)
    ax.plot([0, 1], [1, 2])
    with pytest.raises(TypeError):
        save(fig, tmp_path / "y.png")            # type: ignore[call-arg]


def test_a_log_axis_spans_at_least_a_decade():
    """13-33 us on a log axis filled the plot's height; it now spans a decade around it."""
    import matplotlib

    matplotlib.use("Agg")
    from opendcn.experiments.plots import figure, from_zero

    fig, ax = figure(4, 3)
    ax.plot([1, 2, 3], [13, 20, 33])
    ax.set_yscale("log")
    from_zero(ax)
    lo, hi = ax.get_ylim()
    assert hi / lo >= 9.99 and lo < 13 and hi > 33
    fig2, ax2 = figure(4, 3)
    ax2.plot([1, 2], [1, 1000])
    ax2.set_yscale("log")
    before = ax2.get_ylim()
    from_zero(ax2)
    assert ax2.get_ylim() == before                      # a wide axis is left alone
