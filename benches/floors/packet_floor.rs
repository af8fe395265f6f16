//! The floor under the packet engine on this machine: the bare mechanics of a packet-hop
//! on a rotor fabric, without transports, routing tables, buffers, ledger or metrics.
//!
//! N nodes with U rotor uplinks each follow a round-robin schedule (slice s: uplink k of
//! node a reaches node `(a + 1 + (s·U + k) mod (N − 1)) mod N`). Every node is a
//! backlogged source: whenever its injection event fires it sends one packet to a random
//! destination, sprayed on a random uplink (VLB's first hop); a packet at an
//! intermediate waits for the first slice whose circuit leads to its destination. Each
//! uplink keeps a calendar of departure tails per slice (the planning the engine does);
//! each packet-hop is one event in the project's event list ([`EventList`]), exactly as
//! in the engine: pop the arrival, choose the port, plan the departure, push the next
//! arrival. Sources are paced at the uplink capacity so the number of packets in flight
//! stays realistic.
//!
//! `cargo run --release -p opendcn-floors --bin packet_floor -- NODES UPLINKS SIM_US [LOAD_PCT]`
//! prints the packet-hops and the wall time per packet-hop (sources paced at LOAD_PCT,
//! default 100, of their uplink capacity).
use opendcn_core::event::EventList;
use opendcn_core::rng::mix64;
use std::time::Instant;

#[derive(Clone, Copy)]
enum Ev {
    Inject(u32),
    Arrive(u32),
}

#[derive(Clone, Copy)]
struct Pkt {
    dst: u32,
    at: u32,
}

fn main() {
    const USAGE: &str = "usage: packet_floor NODES UPLINKS SIM_US [LOAD_PCT] (whole numbers, NODES >= 3)";
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().unwrap_or_else(|_| panic!("{USAGE}"))).collect();
    let (n, u, sim_us, load) = match args[..] {
        [n, u, t] if n >= 3 && u >= 1 => (n as u32, u as u32, t, 100),
        [n, u, t, l] if n >= 3 && u >= 1 && (1..=100).contains(&l) => (n as u32, u as u32, t, l),
        _ => panic!("{USAGE}"),
    };
    let slice: u64 = 2_000_000; // 2 us
    let guard: u64 = 200_000;
    let ser: u64 = 120_000; // 1500 B at 100 Gb/s
    let prop: u64 = 500_000;
    let slices = (n - 1).div_ceil(u) as u64;
    let peer = |a: u32, k: u32, s: u64| -> u32 { (a + 1 + ((s * u as u64 + k as u64) % (n as u64 - 1)) as u32) % n };
    let mut ev: EventList<Ev> = EventList::with_lookahead(1);
    let mut pool: Vec<Pkt> = Vec::new();
    let mut free: Vec<u32> = Vec::new();
    // per uplink and slice index of the cycle: (absolute slice, tail time)
    let mut tails = vec![(u64::MAX, 0u64); (n * u) as usize * slices as usize];
    let mut draws = 0u64;
    let end = sim_us * 1_000_000;
    for a in 0..n {
        ev.push(a as u64 * 7, Ev::Inject(a));
    }
    // plan a departure on uplink (a, k) in the first occurrence of slice index `idx` at or
    // after now with room for the packet; returns the arrival time at the far end
    let gap = ser * 100 / (u as u64 * load);
    let plan = |a: u32, k: u32, now: u64, idx: u64, tails: &mut Vec<(u64, u64)>| -> u64 {
        let cur = now / slice;
        let mut abs = cur + (idx + slices - cur % slices) % slices;
        let cell = ((a * u + k) as u64 * slices + idx) as usize;
        loop {
            let start = abs * slice;
            let (ta, tt) = tails[cell];
            let t0 = now.max(start + guard).max(if ta == abs { tt } else { 0 });
            if t0 + ser <= start + slice {
                tails[cell] = (abs, t0 + ser);
                return t0 + ser + prop;
            }
            abs += slices;
        }
    };
    let mut hops = 0u64;
    let t0 = Instant::now();
    while let Some((now, e)) = ev.pop() {
        if now > end {
            break;
        }
        match e {
            Ev::Inject(a) => {
                draws += 1;
                let r = mix64(draws ^ (a as u64) << 32);
                let mut dst = (r % n as u64) as u32;
                if dst == a {
                    dst = (dst + 1) % n;
                }
                let k = ((r >> 32) % u as u64) as u32;
                let s = now / slice;
                let at = peer(a, k, s);
                let id = match free.pop() {
                    Some(i) => {
                        pool[i as usize] = Pkt { dst, at };
                        i
                    }
                    None => {
                        pool.push(Pkt { dst, at });
                        (pool.len() - 1) as u32
                    }
                };
                let arr = plan(a, k, now, s % slices, &mut tails);
                hops += 1;
                ev.push(arr, Ev::Arrive(id));
                // paced at LOAD_PCT of the node's uplink capacity
                ev.push(now + gap, Ev::Inject(a));
            }
            Ev::Arrive(id) => {
                let p = pool[id as usize];
                if p.at == p.dst {
                    free.push(id);
                    continue;
                }
                // wait at the intermediate for the first circuit to the destination
                let d = (p.dst + n - p.at - 1) % n; // offset - 1 in 0..n-1
                let idx = d as u64 / u as u64;
                let k = d % u;
                pool[id as usize].at = p.dst;
                let arr = plan(p.at, k, now, idx, &mut tails);
                hops += 1;
                ev.push(arr, Ev::Arrive(id));
            }
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    println!("{n} nodes x {u} uplinks, load {load} %, {sim_us} us: {hops} packet-hops in {wall:.3} s = {:.1} ns per packet-hop ({:.2} M/s), {} packets in the pool",
             wall * 1e9 / hops as f64, hops as f64 / wall / 1e6, pool.len());
}
