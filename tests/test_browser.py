"""The HTML pages in a real browser (headless Chromium; `.ci/run` installs Debian's
`chromium`, skipped with the reason where it is absent): the roll-up of every study with
reference records, each study's page, a sweep report and a run report have no horizontal
overflow at 1280 px and every image loads."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import opendcn as od
from opendcn import studies
from opendcn.experiments.report import write_report
from opendcn.experiments.sweep_report import write_sweep_report
from opendcn.experiments.sweeps import sweep

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium here (Debian: apt-get install chromium)")

PROBE = """<script>window.addEventListener('load', () => { const d = document.documentElement;
const imgs = [...document.images];
document.body.setAttribute('data-probe', JSON.stringify({scroll: d.scrollWidth, client: d.clientWidth,
  images: imgs.length, broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt)})); });
</script>"""


def render(page: Path) -> dict:
    """Open ``page`` (a copy with the probe, beside it so relative images resolve) in
    headless Chromium at 1280 x 900 and read what the probe measured."""
    text = page.read_text()
    probe = page.with_name(f".probe-{page.name}")
    probe.write_text(text.replace("</body>", PROBE + "</body>") if "</body>" in text else text + PROBE)
    try:
        r, m = dump(probe.as_uri(), 5000, r'data-probe="([^"]*)"')
    finally:
        probe.unlink()
    assert m, f"the page did not load in Chromium: {r.stderr[-500:]}"
    return json.loads(html.unescape(m.group(1)))


def dump(uri: str, budget_ms: int, pattern: str) -> tuple[subprocess.CompletedProcess, re.Match | None]:
    """Chromium's DOM of ``uri`` after ``budget_ms`` of virtual time and the probe's match.
    A headless Chromium started on a loaded machine sometimes exits before it dumps (its
    crash reporter's complaints only); it is asked up to three times, and a page that never
    yields its probe fails."""
    for _ in range(3):
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                            "--window-size=1280,900", f"--virtual-time-budget={budget_ms}", "--dump-dom", uri],
                           capture_output=True, text=True, timeout=120)
        m = re.search(pattern, r.stdout)
        if m:
            break
    return r, m


def check(page: Path, min_images: int) -> None:
    got = render(page)
    assert got["scroll"] <= got["client"], f"{page}: {got['scroll']} px wide in a {got['client']} px window"
    assert got["broken"] == [] and got["images"] >= min_images, (page, got)


def test_the_reproduction_pages(tmp_path):
    """Every study page rendered from its records (Opera's has the widest table, OpenOptics'
    the most claims, Duo's is judged section by section) and the roll-up page over them."""
    from opendcn.studies.base import rollup

    names = list(studies.REFERENCED)
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        for name in names:
            studies.run(name, out=tmp_path / name, reference="read", echo=lambda _: None)
    finally:
        os.chdir(cwd)
    for name in names:
        check(tmp_path / name / "index.html", 1)
    rollup(tmp_path, names, lambda _: None)
    check(tmp_path / "index.html", 0)


def test_a_sweep_report_and_a_run_report(tmp_path):
    spec = {"arch": "clos", "duration": "50us", "options": {"nodes": 4, "uplinks": 2},
            "vary": {"load": [0.2, 0.4], "transport": ["ideal", "dctcp"]}}
    sweep(spec, tmp_path / "sw", executor="local", workers=1)
    check(write_sweep_report(tmp_path / "sw"), 4)
    runs = [od.arch.clos(nodes=4, uplinks=2).run(od.workload.poisson("hadoop", load=0.3), duration="100us"),
            od.arch.rotornet(nodes=4, uplinks=2).run(od.workload.poisson("hadoop", load=0.3), duration="100us")]
    check(write_report(runs, tmp_path / "rep"), 2)


def test_the_openoptics_dashboard(tmp_path):
    from opendcn.openoptics import OpticalRouting, OpticalTopo, Toolbox

    net = Toolbox.BaseNetwork("dash", nb_node=8, backend="ns3", time_slice_duration_us=100, guardband_us=1,
                              quiet=True, simulation_stop_s=0.005)
    net.deploy_topo(OpticalTopo.round_robin(nb_node=8))
    net.deploy_routing(OpticalRouting.routing_direct(net.get_topo()), routing_mode="Per-hop")
    page = Path(net.start_monitor(str(tmp_path / "dash")))
    u = net.udp_traffic()
    for a in range(8):
        u.flow(a, (a + 3) % 8, num_packets=20, interval_s=1e-4, start_s=0.0, packet_size_bytes=1000)
    u.install()
    net.start()
    check(page, 0)                     # Plotly charts, no images


PLOTS = """<script>window.addEventListener('load', () => setTimeout(() => {
document.body.setAttribute('data-plots', JSON.stringify({plots: document.querySelectorAll('.js-plotly-plot').length,
  drawn: document.querySelectorAll('.js-plotly-plot .main-svg').length,
  scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth}));}, 500));
</script>"""


def test_the_run_dashboard_draws_its_plotly_charts(tmp_path):
    """`opendcn dashboard`'s page in Chromium: every Plotly chart is drawn (an SVG in each),
    offline, and the page fits the window's width."""
    from opendcn.network.dashboard import write_dashboard

    res = od.arch.rotornet(nodes=6, uplinks=1).run(od.workload.poisson("hadoop", load=0.3), duration="100us")
    res.write(tmp_path / "run")
    page = write_dashboard(tmp_path / "run")
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PLOTS + "</body>"))
    r, m = dump(probe.as_uri(), 8000, r'data-plots="([^"]*)"')
    assert m, r.stderr[-500:]
    got = json.loads(html.unescape(m.group(1)))
    assert got["plots"] == 4 and got["drawn"] >= 4 and got["scroll"] <= got["client"], got
