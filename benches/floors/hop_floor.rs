//! The floor under any cell-level Shale engine on this machine: the bare mechanics of
//! a cell-hop, without congestion control, buckets, per-flow accounting or metrics.
//!
//! Every node keeps one FIFO of cells per neighbour (a linked list in the node's own
//! pool). In timeslot t every node sends the head cell of its queue for this timeslot's
//! neighbour, else a new cell to a random destination (sources always backlogged). A
//! cell sprays once per phase (h random hops), then takes the direct semi-path. Flights
//! of one window of D timeslots are grouped by receiver (counting sort) and received in
//! the next window, node by node, as the window engine does.
//!
//! `cargo run --release -p opendcn-floors --bin hop_floor -- NODES H TIMESLOTS [WARMUP]`
//! prints the cell-hops and the wall time per cell-hop after the warm-up.
use opendcn_core::rng::mix64;
use std::time::Instant;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Cell {
    dst: u32,
    next: u32,
    r: u32,
}

#[derive(Clone, Copy, Default)]
struct Flight {
    y: u32,
    at: u32,
    dst: u32,
    r: u32,
}

struct Node {
    cells: Vec<Cell>,
    free: Vec<u32>,
    draws: u64,
}

fn main() {
    const USAGE: &str = "usage: hop_floor NODES H TIMESLOTS [WARMUP] (whole numbers; NODES a perfect H-th power)";
    let a: Vec<u64> = std::env::args().skip(1).map(|s| s.parse().unwrap_or(0)).collect();
    if a.len() < 3 || a.len() > 4 || a[..3].contains(&0) || a[1] > 8 {
        eprintln!("{USAGE}");
        std::process::exit(2);
    }
    let (n, h, slots) = (a[0] as u32, a[1] as u32, a[2]);
    let warm = a.get(3).copied().unwrap_or(slots / 2);
    let m = (n as f64).powf(1.0 / h as f64).round() as u32;
    if m < 2 || m.checked_pow(h) != Some(n) || warm >= slots {
        eprintln!("{USAGE}; WARMUP below TIMESLOTS");
        std::process::exit(2);
    }
    let kk = (h * (m - 1)) as usize;
    let d = 97u64; // ⌈(45.056 ns + 500 ns) / 5.632 ns⌉ timeslots, as the window engine
    let pw: Vec<u32> = (0..h).map(|p| m.pow(p)).collect();
    let coord = |x: u32, p: u32| (x / pw[p as usize]) % m;
    let mut nodes: Vec<Node> = (0..n).map(|_| Node { cells: Vec::new(), free: Vec::new(), draws: 0 }).collect();
    // per (node, neighbour index): head and tail of the FIFO
    let mut head = vec![NONE; n as usize * kk];
    let mut tail = vec![NONE; n as usize * kk];
    let mut out: Vec<Flight> = Vec::new();
    let mut inb: Vec<Flight> = Vec::new();
    let mut off = vec![0u32; n as usize + 1];
    let mut hops = 0u64;
    // when the timed part starts, and the cell-hops before it
    let mut mark: Option<(Instant, u64)> = None;
    let mut t = 0u64;
    while t < slots {
        if t >= warm && mark.is_none() {
            mark = Some((Instant::now(), hops));
        }
        let b = (t + d).min(slots);
        // last window's flights, grouped by receiver
        off.iter_mut().for_each(|v| *v = 0);
        for f in &out {
            off[f.y as usize + 1] += 1;
        }
        for i in 1..off.len() {
            off[i] += off[i - 1];
        }
        inb.resize(out.len(), Flight::default());
        let mut fill = off.clone();
        for f in &out {
            inb[fill[f.y as usize] as usize] = *f;
            fill[f.y as usize] += 1;
        }
        out.clear();
        for x in 0..n {
            let nd = &mut nodes[x as usize];
            let base = x as usize * kk;
            let mut e = off[x as usize] as usize;
            let ee = off[x as usize + 1] as usize;
            for ts in t..b {
                let i = (ts - t) as u32;
                // the arrival of this timeslot: delivered, or queued for its next hop
                if e < ee && inb[e].at == i {
                    let f = inb[e];
                    e += 1;
                    if f.dst != x {
                        let src_k = ((ts - d) % kk as u64) as u32;
                        let p = src_k / (m - 1);
                        let k = if f.r > 0 {
                            let q = (p + 1) % h;
                            let z = mix64((x as u64) << 40 | nd.draws);
                            nd.draws += 1;
                            q * (m - 1) + (((z >> 32) * (m - 1) as u64) >> 32) as u32
                        } else {
                            let mut q = p;
                            loop {
                                q = (q + 1) % h;
                                let (cy, cd) = (coord(x, q), coord(f.dst, q));
                                if cy != cd {
                                    break q * (m - 1) + (cd + m - cy) % m - 1;
                                }
                            }
                        };
                        let c = Cell { dst: f.dst, next: NONE, r: f.r };
                        let ci = match nd.free.pop() {
                            Some(ci) => {
                                nd.cells[ci as usize] = c;
                                ci
                            }
                            None => {
                                nd.cells.push(c);
                                nd.cells.len() as u32 - 1
                            }
                        };
                        let l = base + k as usize;
                        if tail[l] == NONE {
                            head[l] = ci;
                        } else {
                            nd.cells[tail[l] as usize].next = ci;
                        }
                        tail[l] = ci;
                    }
                }
                // this timeslot's turn: the queued head cell, else a new cell
                let k = (ts % kk as u64) as u32;
                let (p, j) = (k / (m - 1), k % (m - 1) + 1);
                let c = coord(x, p);
                let y = x - c * pw[p as usize] + ((c + j) % m) * pw[p as usize];
                let l = base + k as usize;
                let (dst, r) = if head[l] != NONE {
                    let ci = head[l];
                    let c = nd.cells[ci as usize];
                    head[l] = c.next;
                    if c.next == NONE {
                        tail[l] = NONE;
                    }
                    nd.free.push(ci);
                    (c.dst, c.r.saturating_sub(1))
                } else {
                    let z = mix64(!((x as u64) << 40 | nd.draws));
                    nd.draws += 1;
                    ((((z >> 32) * n as u64) >> 32) as u32, h - 1)
                };
                out.push(Flight { y, at: i, dst, r });
                hops += 1;
            }
        }
        t = b;
    }
    let Some((t0, hops_warm)) = mark else {
        eprintln!("WARMUP {warm} leaves no window of {d} timeslots to time before {slots}");
        std::process::exit(2);
    };
    let wall = t0.elapsed().as_secs_f64();
    let hw = hops - hops_warm;
    let cells: usize = nodes.iter().map(|nd| nd.cells.len() - nd.free.len()).sum();
    println!(
        "nodes {n} h {h} timeslots {slots} (timed after {warm}): cell-hops {hw}, cells queued at the end {cells}, wall {wall:.2} s, {:.1} ns per cell-hop",
        wall * 1e9 / hw as f64
    );
}
