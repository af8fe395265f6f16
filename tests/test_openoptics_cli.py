"""OpenOptics' interactive CLI (`net.start_cli()`, `OpticalCLI`) and dashboard
(`net.start_monitor()`) on opendcn: a session read from a script pings, changes circuits
and reads metrics, answering wrong input with what it expected; the dashboard page is
rewritten after every run with what that run did."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

import opendcn as od
from opendcn.openoptics import OpticalRouting, OpticalTopo, Toolbox
from opendcn.openoptics.OpticalCLI import OpticalCLI


def _net(**kw):
    net = Toolbox.BaseNetwork("cli", nb_node=4, nb_link=2, backend="ns3", time_slice_duration_us=100,
                              guardband_us=1, quiet=True, **kw)
    net.deploy_topo(OpticalTopo.round_robin(nb_node=4))
    net.deploy_routing(OpticalRouting.routing_direct(net.get_topo()), routing_mode="Per-hop")
    return net


def _session(net, text: str) -> str:
    out = io.StringIO()
    OpticalCLI(net, stdin=io.StringIO(text), stdout=out)
    return out.getvalue()


def test_ping_reports_each_reply_and_the_loss():
    net = _net()
    out = _session(net, "h0 ping h2 -c 4 -i 0.5\nexit\n")
    times = [float(x) for x in re.findall(r"icmp_seq=\d+ time=([\d.]+) ms", out)]
    assert len(times) == 4 and "4 packets transmitted, 4 received, 0% packet loss" in out
    # 0 -> 2 has its circuit in slice 1 of 3 (100 us each): a request waits at most a cycle
    assert all(0 < t < 0.35 for t in times)
    # the same pair run directly on the network gives the same times
    again = net._ping_pair(0, 2, 4, 0.5)
    assert [round(x, 3) for x in again] == times


def test_a_circuit_removed_in_the_session_stops_the_pings_it_carried():
    net = _net()
    out = _session(net, "topo 1\ndisconnect 1 0 2 0 0\nh0 ping h2 -c 2\nconnect 1 0 2 0 0\nh0 ping h2 -c 2\n")
    assert "slice 1: 0:0->2:0" in out
    assert "disconnected node 0 port 0 and node 2 port 0 in slice 1" in out
    assert "2 packets transmitted, 0 received, 100% packet loss" in out
    assert out.count("2 packets transmitted, 2 received, 0% packet loss") == 1


def test_metrics_after_a_pingall_and_wrong_input():
    net = _net()
    out = _session(net, "pingall\nget_packet_loss_ctr tor0 tor3\nget_num_queued_packets\nget_network_metric\n"
                        "flows\nbogus\nh0 ping h7\nh0 ping h1 -c x\nconnect 0 1\nconnect 0 9 1\ntopo x\nexit\n")
    assert "*** Results: 0% dropped (36/36 received)" in out
    assert "tor0: 0 packets lost" in out and "tor3: 0 packets lost" in out and "tor1: 0 packets lost" not in out
    assert "tor2: 0 packets queued" in out and "tor0: pq_depth" in out
    assert "unknown command: 'bogus'" in out and "no host h7: the network has h0..h3" in out
    assert "usage: hA ping hB" in out or "unknown option" in out
    assert "node2 9 is not a node" in out or "9 is not a node" in out
    assert "usage: topo [SLICE]" in out and "Traceback" not in out
    tab = _session(net, "tables 0\ntables x\n")
    assert "node 0: to 2, arriving in slice 0: port 0 in slice 1" in tab and "usage: tables [NODE]" in tab


def test_the_dashboard_is_written_after_every_run(tmp_path):
    net = _net(simulation_stop_s=0.003)
    page = Path(net.start_monitor(str(tmp_path / "d")))
    assert not page.exists()                            # nothing has run yet
    with pytest.raises(od.ConfigError, match="run the network"):
        net.dashboard(str(tmp_path / "e"))
    net.udp_traffic().flow(0, 3, num_packets=5, interval_s=1e-4, start_s=0.0).install()
    net.start()
    after = page.read_text()
    assert "Circuits" in after and "Time-flow table" in after and "Flow completion times" in after
    assert "No pingall yet" in after and "tor0" in after
    net._ping_all()
    assert "36 of 36 echo requests answered" in page.read_text()
    assert sorted(p.name for p in page.parent.iterdir()) == ["index.html", "run"]   # no temporary file left
    assert (page.parent / "run" / "fabric.json").is_file()


def test_a_mininet_script_at_a_terminal_gets_the_prompt_after_its_run(tmp_path):
    """As OpenOptics' Mininet backend: start() ends at the OpenOptics> prompt when the
    script runs at a terminal (here a pseudo-terminal), and returns without it otherwise."""
    import os
    import pty
    import subprocess
    import sys

    script = tmp_path / "s.py"
    script.write_text(
        "from opendcn.openoptics import Toolbox, OpticalTopo, OpticalRouting\n"
        "net = Toolbox.BaseNetwork('t', nb_node=4, backend='Mininet', time_slice_duration_ms=2, guardband_us=1)\n"
        "net.deploy_topo(OpticalTopo.round_robin(nb_node=4))\n"
        "net.deploy_routing(OpticalRouting.routing_direct(net.get_topo()), routing_mode='Per-hop')\n"
        "net.start()\nprint('after start')\n")
    plain = subprocess.run([sys.executable, str(script)], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=120)
    assert plain.returncode == 0 and "after start" in plain.stdout and "OpenOptics>" not in plain.stdout
    main, sub = pty.openpty()
    p = subprocess.Popen([sys.executable, str(script)], stdin=sub, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    os.close(sub)
    os.write(main, b"h0 ping h1 -c 1\nexit\n")
    out, err = p.communicate(timeout=120)
    os.close(main)
    assert p.returncode == 0, err
    assert "OpenOptics>" in out and "1 packets transmitted, 1 received" in out and "after start" in out


def test_pings_held_for_a_circuit_are_reported_as_held_not_dropped(capsys):
    """A traffic-aware network whose fixed matching never connects some pairs: their echo
    requests wait at their ToR to the end of the run; the report says they are held."""
    net = Toolbox.BaseNetwork("ta", nb_node=4, backend="ns3", arch_mode="TA", simulation_stop_s=0.01)
    net.deploy_topo(OpticalTopo.static_topo(nb_node=4, nb_link=1))
    net.deploy_routing(OpticalRouting.routing_direct_ta(net.get_topo()), routing_mode="Per-hop", arch_mode="TA")
    net._ping_all(rounds=1, gap_s=0.001, duration_s=0.05)
    out = capsys.readouterr().out
    held = net.result.summary["held"]["packets"]
    assert held > 0 and sum(net.result.summary["packets"]["dropped"].values()) == 0
    assert f"{held} packets still held at a ToR" in out and "held, not dropped" in out and "% dropped" not in out
