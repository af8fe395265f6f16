//! Link failures: the physical state of the ToR–AWGR fibers, detection from the dummy
//! messages and feedback of each predefined phase (and its broadcast one epoch later),
//! and the thin-clos detours around links known to be down.

use super::Negotiator;
use crate::units::{Ps, NONE};

impl Negotiator {
    #[inline]
    pub(super) fn link_up(&self, i: u32, p: u32, d: u32) -> bool {
        !(self.fail.down_eg[(i * self.s + p) as usize] || self.fail.down_in[(d * self.s + p) as usize])
    }

    /// Usable for data according to what ToR `me` knows.
    #[inline]
    pub(super) fn usable(&self, i: u32, p: u32, d: u32) -> bool {
        let (e, g) = ((i * self.s + p) as usize, (d * self.s + p) as usize);
        !(self.fail.local_eg[e] || self.fail.known_eg[e] || self.fail.known_in[g])
    }

    pub(super) fn update_failures(&mut self, e: u64, t0: Ps) {
        if !self.fail.on {
            return;
        }
        // detection from the previous epoch, under the physical state of that epoch
        if self.fail.state != 0 && !(self.fail.state == 2 && e > self.fail.active_until) {
            self.observe(e);
        }
        // physical state changes take effect from this epoch on
        if self.fail.state == 0 && t0 >= self.spec.fail_at_ps {
            self.fail.state = 1;
            self.fail.fail_epoch = e;
            for &l in &self.fail.links_eg {
                self.fail.down_eg[l as usize] = true;
            }
            for &l in &self.fail.links_in {
                self.fail.down_in[l as usize] = true;
            }
        }
        if self.fail.state == 1 && t0 >= self.spec.recover_at_ps {
            self.fail.state = 2;
            self.fail.recover_epoch = e;
            for x in self.fail.down_eg.iter_mut().chain(self.fail.down_in.iter_mut()) {
                *x = false;
            }
            self.fail.active_until = e + 4 * self.spec.detect_epochs as u64 + 4;
        }
    }

    /// Failure detection from the previous epoch's predefined phase (dummy messages in
    /// every slot, feedback on the reverse connection), then the broadcast of last
    /// epoch's detections.
    fn observe(&mut self, e: u64) {
        let ns = (self.n * self.s) as usize;
        // broadcast: what was detected locally last epoch becomes known everywhere
        self.fail.known_eg.copy_from_slice(&self.fail.local_eg);
        self.fail.known_in.copy_from_slice(&self.fail.local_in);
        // observations of the previous epoch's predefined phase (dummy messages and feedback)
        let pe = e.saturating_sub(1);
        let (n, s) = (self.n, self.s);
        let mut recv = vec![false; ns];
        let mut pos = vec![0u32; ns];
        let mut neg = vec![0u32; ns];
        for k in 0..self.lay.pre_slots {
            for i in 0..n {
                for p in 0..s {
                    let d = self.pre_conn(pe, k, i, p);
                    if d == NONE {
                        continue;
                    }
                    let delivered = self.link_up(i, p, d);
                    if delivered {
                        recv[(d * s + p) as usize] = true;
                    }
                    // feedback returns on the reverse connection d → i
                    let (_, pr) = self.pair_slot(pe, d, i);
                    if self.link_up(d, pr, i) {
                        if delivered {
                            pos[(i * s + p) as usize] += 1;
                        } else {
                            neg[(i * s + p) as usize] += 1;
                        }
                    }
                }
            }
        }
        let kth = self.spec.detect_epochs;
        for x in 0..ns {
            // ingress
            if recv[x] {
                self.fail.bad_in[x] = 0;
                self.fail.good_in[x] += 1;
                if self.fail.local_in[x] && self.fail.good_in[x] >= kth {
                    self.fail.local_in[x] = false;
                    self.fail.recovered_epochs.push(e);
                }
            } else {
                self.fail.good_in[x] = 0;
                self.fail.bad_in[x] += 1;
                if !self.fail.local_in[x] && self.fail.bad_in[x] >= kth {
                    self.fail.local_in[x] = true;
                    self.fail.detect_epochs.push(e);
                }
            }
            // egress
            if neg[x] > 0 && pos[x] == 0 {
                self.fail.good_eg[x] = 0;
                self.fail.bad_eg[x] += 1;
                if !self.fail.local_eg[x] && self.fail.bad_eg[x] >= kth {
                    self.fail.local_eg[x] = true;
                    self.fail.detect_epochs.push(e);
                }
            } else if pos[x] > 0 {
                self.fail.bad_eg[x] = 0;
                self.fail.good_eg[x] += 1;
                if self.fail.local_eg[x] && self.fail.good_eg[x] >= kth {
                    self.fail.local_eg[x] = false;
                    self.fail.recovered_epochs.push(e);
                }
            }
        }
        self.b.events += ns as u64;
    }

    /// Thin-clos relay around failed links (§1.9): every pair whose one port-to-port path
    /// is known (to the source) to be down is detoured through an intermediate m reached
    /// over a working port of the source whose own path to the destination is known to
    /// work; the source's requests and data for the pair then go to m, and m forwards
    /// them like its own traffic (second hop).
    pub(super) fn update_detours(&mut self) {
        let (n, s, w, g) = (self.n, self.s, self.fab.w, self.fab.g);
        for &(i, _, d) in &self.detour {
            self.detour_of[(i * n + d) as usize] = NONE;
        }
        self.detour.clear();
        let f = &self.fail;
        let down = |i: u32, p: u32, d: u32| {
            let (x, y) = ((i * s + p) as usize, (d * s + p) as usize);
            f.local_eg[x] || f.known_eg[x] || f.known_in[y]
        };
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for x in 0..(n * s) {
            let (t, p) = (x / s, x % s);
            if p >= g {
                continue;
            }
            if f.local_eg[x as usize] || f.known_eg[x as usize] {
                let grp = (t / w + p) % g;
                pairs.extend((grp * w..(grp + 1) * w).filter(|&d| d != t).map(|d| (t, d)));
            }
            if f.known_in[x as usize] {
                let grp = (t / w + g - p) % g;
                pairs.extend((grp * w..(grp + 1) * w).filter(|&i| i != t).map(|i| (i, t)));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        for (i, d) in pairs {
            let p = self.fab.pair_port(i, d);
            let mut found = NONE;
            'search: for a in 0..g {
                let q = ((i + d) % g + a) % g;
                if q == p {
                    continue;
                }
                let grp = (i / w + q) % g;
                for b in 0..w {
                    let m = grp * w + (i + d + b) % w;
                    if m == i || m == d || down(i, q, m) {
                        continue;
                    }
                    let pm = self.fab.pair_port(m, d);
                    if !down(m, pm, d) {
                        found = m;
                        break 'search;
                    }
                }
            }
            if found != NONE {
                self.detour.push((i, found, d));
            }
        }
        self.detour.sort_unstable();
        for &(i, m, d) in &self.detour {
            self.detour_of[(i * n + d) as usize] = m;
        }
        self.m_detoured_max = self.m_detoured_max.max(self.detour.len() as u64);
    }
}
