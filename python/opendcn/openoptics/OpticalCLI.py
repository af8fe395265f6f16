"""An interactive session on an OpenOptics network that opendcn runs (``net.start_cli()``).

OpenOptics' CLI talks to live Mininet hosts and switches; here every command that needs
traffic runs it on opendcn's packet engine, in simulated time, and prints what came of
it. Commands (``help`` lists them):

- ``h0 ping h1 [-c N] [-i SECONDS]`` (also ``0 ping 1``): N echo requests (default 3), one
  every ``-i`` seconds (default 1), with each reply's round-trip time and the loss, as
  ``ping`` prints them;
- ``pingall``: three echo requests between every pair of hosts;
- ``connect [SLICE] N1 N2 [P1 P2]`` / ``disconnect [SLICE] N1 N2 [P1 P2]``: change the
  circuits (slice 0 and ports 0 by default), deployed at once for the next command;
- ``topo [SLICE]``: the circuits of every slice (or one); ``tables [NODE]``: the
  deployed time-flow entries (or source routes);
- ``get_network_metric``, ``get_num_queued_packets [tor0 ...]``,
  ``get_packet_loss_ctr [tor0 ...]``: the switches' metrics after the last run;
- ``flows``: the statistics of the last run's flows;
- ``exit`` (or Ctrl-D).

A wrong command or argument prints what was expected and the session goes on.

>>> from opendcn.openoptics import Toolbox, OpticalTopo, OpticalRouting
>>> import io
>>> net = Toolbox.BaseNetwork("cli", nb_node=4, backend="ns3", time_slice_duration_us=100, guardband_us=1, quiet=True)
>>> _ = net.deploy_topo(OpticalTopo.round_robin(nb_node=4))
>>> _ = net.deploy_routing(OpticalRouting.routing_direct(net.get_topo()), routing_mode="Per-hop")
>>> out = io.StringIO()
>>> _ = OpticalCLI(net, stdin=io.StringIO("h0 ping h2 -c 2\\nexit\\n"), stdout=out)
>>> print(out.getvalue().splitlines()[-3])
2 packets transmitted, 2 received, 0% packet loss
"""

from __future__ import annotations

import cmd
import math
import sys
from typing import IO, Any

from ..errors import ConfigError

__all__ = ["OpticalCLI"]


class OpticalCLI(cmd.Cmd):
    """OpenOptics' command line over an opendcn-run network. Constructing it runs the
    session until ``exit`` or the end of the input (``script``: a file of commands)."""

    intro = ("opendcn OpenOptics CLI: commands run on opendcn's packet engine in simulated time. Type 'help' for "
             "the commands, 'exit' or Ctrl-D to quit.")
    prompt = "OpenOptics> "

    def __init__(self, base_network: Any, stdin: IO[str] = sys.stdin, script: str | None = None,
                 stdout: IO[str] | None = None):
        super().__init__(stdin=stdin if script is None else open(script), stdout=stdout or sys.stdout)
        self.base_network = base_network
        self.device_manager = base_network.device_manager
        if script is not None or stdin is not sys.stdin:
            self.use_rawinput = False
            self.intro = ""
        try:
            self.cmdloop()
        finally:
            if script is not None:
                self.stdin.close()

    # ---------------------------------------------------------------- helpers
    def say(self, text: str = "") -> None:
        self.stdout.write(text + "\n")

    def _host(self, s: str) -> int:
        name = s[1:] if s.startswith("h") else s
        if not name.isdigit():
            raise ValueError(f"{s!r} is not a host (h0, h1, ... or 0, 1, ...)")
        h = int(name)
        hosts = self.base_network.nb_node * self.base_network.nb_host_per_tor
        if h >= hosts:
            raise ValueError(f"no host {s}: the network has h0..h{hosts - 1}")
        return h

    def _circuit_args(self, line: str, what: str) -> tuple[int, int, int, int, int]:
        args = line.split()
        if len(args) not in (2, 3, 5):
            raise ValueError(f"usage: {what} [SLICE] NODE1 NODE2 [PORT1 PORT2]")

        def node(s: str) -> int:
            n = s[1:] if s[:1] in ("h", "n") else s
            if not n.isdigit():
                raise ValueError(f"{s!r} is not a node number")
            return int(n)

        if len(args) == 2:
            return 0, node(args[0]), node(args[1]), 0, 0
        if not all(a.lstrip("hn").isdigit() for a in args):
            raise ValueError(f"usage: {what} [SLICE] NODE1 NODE2 [PORT1 PORT2] (whole numbers)")
        ts, a, b = int(args[0]), node(args[1]), node(args[2])
        if len(args) == 3:
            return ts, a, b, 0, 0
        return ts, a, b, int(args[3]), int(args[4])

    # ---------------------------------------------------------------- traffic
    def default(self, line: str) -> None:
        words = line.split()
        if len(words) >= 3 and words[1] == "ping":
            self._ping(words[0], words[2], words[3:])
        else:
            self.say(f"unknown command: {line!r} (type 'help')")

    def emptyline(self) -> bool:
        return False

    def _ping(self, a: str, b: str, opts: list[str]) -> None:
        count, gap = 3, 1.0
        try:
            src, dst = self._host(a), self._host(b)
            it = iter(opts)
            for o in it:
                v = next(it, None)
                if o == "-c" and v is not None and v.isdigit() and int(v) > 0:
                    count = int(v)
                elif o == "-i" and v is not None:
                    gap = float(v)
                    if not gap > 0 or not math.isfinite(gap):
                        raise ValueError
                else:
                    raise ValueError(f"unknown option {o} (ping takes -c COUNT and -i SECONDS)")
        except (ValueError, TypeError) as e:
            self.say(str(e) or "usage: hA ping hB [-c COUNT] [-i SECONDS]")
            return
        if src == dst:
            self.say("a host pings another host")
            return
        net = self.base_network
        try:
            rtts = net._ping_pair(src, dst, count, gap)
        except ConfigError as e:
            self.say(f"error: {e}")
            return
        self.say(f"PING {net._addr(dst)} ({count} echo requests of {int(net._ping_bytes)} B, {gap:g} s apart, "
                 "simulated)")
        for i, r in enumerate(rtts):
            self.say(f"from {net._addr(dst)}: icmp_seq={i + 1} " + (f"time={r:.3f} ms" if r is not None else
                                                                    "no reply"))
        got = [r for r in rtts if r is not None]
        self.say(f"{count} packets transmitted, {len(got)} received, {round(100 * (count - len(got)) / count)}% "
                 "packet loss")
        if got:
            self.say(f"rtt min/avg/max = {min(got):.3f}/{sum(got) / len(got):.3f}/{max(got):.3f} ms")

    def do_pingall(self, line: str) -> bool:
        """pingall: three echo requests between every pair of hosts."""
        net = self.base_network
        quiet, net.quiet = net.quiet, False
        old = sys.stdout
        sys.stdout = self.stdout
        try:
            net._ping_all()
        except ConfigError as e:
            self.say(f"error: {e}")
        finally:
            sys.stdout, net.quiet = old, quiet
        return False

    # ---------------------------------------------------------------- circuits
    def do_connect(self, line: str) -> bool:
        """connect [SLICE] NODE1 NODE2 [PORT1 PORT2]: add a circuit (slice 0, ports 0 by default)."""
        self._change(line, "connect")
        return False

    def do_disconnect(self, line: str) -> bool:
        """disconnect [SLICE] NODE1 NODE2 [PORT1 PORT2]: remove a circuit."""
        self._change(line, "disconnect")
        return False

    def _change(self, line: str, what: str) -> None:
        net = self.base_network
        try:
            ts, a, b, p, q = self._circuit_args(line, what)
            if net.arch_mode == "TA" and ts != 0:
                raise ValueError("a traffic-aware network has one slice: use slice 0")
            quiet, net.quiet = net.quiet, False
            old = sys.stdout
            sys.stdout = self.stdout
            try:
                ok = getattr(net, what)(ts, a, b, p, q)
            finally:
                sys.stdout, net.quiet = old, quiet
            if ok:
                net.deploy_topo()
                self.say(f"{what}ed node {a} port {p} and node {b} port {q} in slice {ts}")
            else:
                self.say(f"failed to {what}")
        except (ValueError, ConfigError) as e:
            self.say(str(e))

    def do_topo(self, line: str) -> bool:
        """topo [SLICE]: the circuits of every slice (or of one)."""
        net = self.base_network
        want = line.split()
        if want and not want[0].isdigit():
            self.say("usage: topo [SLICE]")
            return False
        for ts in sorted(net.slice_to_topo):
            if want and ts != int(want[0]):
                continue
            g = net.slice_to_topo[ts]
            pairs = sorted((a, b, d.get("port1", 0), d.get("port2", 0)) for a, b, d in g.edges(data=True))
            text = ", ".join(f"{a}:{p}->{b}:{q}" for a, b, p, q in pairs) or "(no circuit)"
            self.say(f"slice {ts}: {text}")
        return False

    def do_tables(self, line: str) -> bool:
        """tables [NODE]: the deployed time-flow entries (per hop: each node's (destination,
        arrival slice) -> (port, departure slice) choices; source routing: each route)."""
        net = self.base_network
        arg = line.split()
        if arg and not arg[0].lstrip("n").isdigit():
            self.say("usage: tables [NODE]")
            return False
        want = int(arg[0].lstrip("n")) if arg else None
        shown = 0
        for node, table in sorted(net._hop_tables.items()):
            if want is not None and node != want:
                continue
            for (dst, arr), acts in sorted(table.items()):
                how = ", ".join(f"port {p} in slice {d}" for p, d in acts) or "no way on"
                self.say(f"node {node}: to {dst}, arriving in slice {arr}: {how}")
                shown += 1
        for (src, dst, arr), routes in sorted(net._routes.items()):
            if want is not None and src != want:
                continue
            for r in routes:
                hops = " -> ".join(f"node {n} port {p} slice {t}" for n, p, t in r)
                self.say(f"route {src} -> {dst}, sent in slice {arr}: {hops}")
                shown += 1
        if not shown:
            self.say("no time-flow entry deployed" + (f" at node {want}" if want is not None else ""))
        return False

    # ---------------------------------------------------------------- metrics
    def _switches(self, line: str) -> list[str] | None:
        names = [f"tor{i}" for i in range(self.base_network.nb_node)]
        args = line.split()
        bad = [a for a in args if a not in names]
        if bad:
            self.say(f"unknown switch {bad[0]} (tor0..tor{len(names) - 1})")
            return None
        return args or names

    def do_get_network_metric(self, line: str) -> bool:
        """get_network_metric: every switch's queue depths and drop counter after the last run."""
        for name, m in self.device_manager.get_device_metric().items():
            depth = ", ".join(f"port {p} queue {q}: {d}" for (p, q), d in sorted(m["pq_depth"].items())) or "-"
            self.say(f"{name}: pq_depth {depth}; drop_ctr {m['drop_ctr']}")
        return False

    def do_get_num_queued_packets(self, line: str) -> bool:
        """get_num_queued_packets [tor0 ...]: packets queued at each switch."""
        names = self._switches(line)
        if names is not None:
            metric = self.device_manager.get_device_metric()
            for n in names:
                self.say(f"{n}: {sum(metric[n]['pq_depth'].values())} packets queued")
        return False

    def do_get_packet_loss_ctr(self, line: str) -> bool:
        """get_packet_loss_ctr [tor0 ...]: packets of each switch's hosts that were lost."""
        names = self._switches(line)
        if names is not None:
            metric = self.device_manager.get_device_metric()
            for n in names:
                self.say(f"{n}: {metric[n]['drop_ctr']} packets lost")
        return False

    def do_flows(self, line: str) -> bool:
        """flows: the statistics of the last run's flows."""
        stats = self.base_network.get_flow_stats()
        if not stats:
            self.say("no installed traffic has run yet (pings are not flows: see their output)")
        for s in stats:
            self.say(f"{s.protocol} {s.src_ip} -> {s.dst_ip}: tx {s.tx_packets} rx {s.rx_packets} lost "
                     f"{s.lost_packets}" + ("" if math.isnan(s.fct_s) else f" fct {s.fct_s * 1e3:.3f} ms"))
        return False

    def do_exit(self, line: str) -> bool:
        """exit: end the session."""
        return True

    def do_EOF(self, line: str) -> bool:
        """Ctrl-D: end the session."""
        self.say()
        return True
