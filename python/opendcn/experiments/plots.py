"""The one way opendcn draws a plot to a PNG file (the studies' plots).

A figure is a :class:`matplotlib.figure.Figure` on the Agg canvas, never a pyplot one:
no global state, no backend to choose (``matplotlib.use``), nothing to close, safe in
threads and in the sweep runner's worker processes.

>>> import tempfile, pathlib
>>> fig, ax = figure(5, 3.5)
>>> _ = ax.plot([0, 1], [1, 2])
>>> f = pathlib.Path(tempfile.mkdtemp()) / "x.png"
>>> save(fig, f, title="a line")
>>> f.read_bytes()[:4] == b"\\x89PNG"
True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["figure", "save", "from_zero"]


def figure(width: float, height: float, ncols: int = 1, nrows: int = 1, *, squeeze: bool = True) -> tuple[Figure, Any]:
    """A new figure of ``width`` x ``height`` inches and its axes (as ``Figure.subplots``
    returns them: one ``Axes``, or an array of ``nrows`` x ``ncols``; ``squeeze=False``
    always gives the 2-D array)."""
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=squeeze)


def save(fig: Figure, path: str | Path, dpi: int = 120, *, title: str) -> None:
    """Title ``fig``, lay it out tightly and write it to ``path`` as a PNG of ``dpi`` dots
    per inch. A linear y-axis whose limits the plot left to matplotlib and whose data are
    all non-negative starts at zero, so that a difference of 1 % never fills the plot."""
    fig.suptitle(title, fontsize=10)
    for ax in fig.axes:
        from_zero(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)


def from_zero(ax: Any) -> None:
    """Keep a y-axis from exaggerating differences, where the plot left its limits to
    matplotlib: a linear axis over non-negative data starts at zero; a log axis spans at
    least one decade around its data (a factor of 2.5 must not fill the height)."""
    if not ax.get_autoscaley_on() or not ax.has_data():
        return
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "log":
        if 0 < lo < hi and hi / lo < 10:
            mid = (lo * hi) ** 0.5
            ax.set_ylim(mid / 10**0.5, mid * 10**0.5)
        return
    if ax.get_yscale() == "linear" and ax.dataLim.y0 >= 0 and 0 < lo < hi:
        ax.set_ylim(0, hi)
