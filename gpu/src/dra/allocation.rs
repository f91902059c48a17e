//! Whether one node can give a set of device wants at once, as the scheduler's allocator
//! decides it: distinct devices, and — where devices are partitions of a GPU (partitionable
//! devices, the DRA driver's DynamicMIG) — the sum of what the chosen devices consume from
//! the pool's shared counters within what each counter holds. A full GPU consumes every
//! counter of its set, so it and any of its partitions exclude each other; two MIG
//! partitions exclude each other when they share a memory slice.
//!
//! The scheduler searches with backtracking; so does this, exhaustively up to a bound on the
//! steps, past which it says it could not tell rather than guess.

use super::devices::DraNode;
use std::collections::{BTreeSet, HashMap};

/// A bound on the search: far beyond what a node's devices need (a GPU's 26 partitions, 8
/// GPUs), short of an unbounded wait on a pathological claim.
const STEPS: usize = 200_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    Yes,
    No,
    /// The search ran past its bound without an answer.
    Unknown,
}

/// Whether `wants` — each `count` distinct devices out of its candidates (indices into the
/// node's devices) — can all be met on `node` at once.
pub(crate) fn fit(node: &DraNode, wants: &[(Vec<usize>, u64)]) -> Fit {
    let slots: u64 = wants.iter().map(|(_, count)| count).sum();
    if node.counters_unknown && slots > 1 {
        // Partitions of a planned node: distinct ones may still exclude each other.
        return if distinct(wants) {
            Fit::Unknown
        } else {
            Fit::No
        };
    }
    let shares = wants
        .iter()
        .flat_map(|(candidates, _)| candidates)
        .any(|&d| !node.devices[d].consumes.is_empty());
    if !shares {
        return if distinct(wants) { Fit::Yes } else { Fit::No };
    }
    // Without counters a distinct choice is a necessary condition; it is cheap to refute.
    if !distinct(wants) {
        return Fit::No;
    }
    let slots: Vec<usize> = wants
        .iter()
        .enumerate()
        .flat_map(|(want, (_, count))| std::iter::repeat_n(want, *count as usize))
        .collect();
    // How many slots of its want each slot and those after it hold: a want with fewer
    // candidates left than slots to fill is abandoned at once.
    let mut remaining = vec![0usize; slots.len()];
    for slot in (0..slots.len()).rev() {
        remaining[slot] = 1 + match slots.get(slot + 1) {
            Some(&next) if next == slots[slot] => remaining[slot + 1],
            _ => 0,
        };
    }
    let mut search = Search {
        node,
        wants,
        slots: &slots,
        remaining: &remaining,
        left: node.counters.clone(),
        used: vec![false; node.devices.len()],
        steps: 0,
    };
    match search.place(0, 0) {
        Some(true) => Fit::Yes,
        Some(false) => Fit::No,
        None => Fit::Unknown,
    }
}

struct Search<'a> {
    node: &'a DraNode,
    wants: &'a [(Vec<usize>, u64)],
    /// The want each slot serves, a want's slots next to each other.
    slots: &'a [usize],
    remaining: &'a [usize],
    left: HashMap<String, HashMap<String, u128>>,
    used: Vec<bool>,
    steps: usize,
}

impl Search<'_> {
    /// Fills slot `slot` and those after it; `from` is where the slot's want may resume its
    /// candidates (a want's devices are chosen in order, so each set is tried once). `None`
    /// when the bound is reached.
    fn place(&mut self, slot: usize, from: usize) -> Option<bool> {
        let Some(&want) = self.slots.get(slot) else {
            return Some(true);
        };
        let candidates = &self.wants[want].0;
        for position in from..candidates.len() {
            if candidates.len() - position < self.remaining[slot] {
                break;
            }
            self.steps += 1;
            if self.steps > STEPS {
                return None;
            }
            let device = candidates[position];
            if self.used[device] || !self.take(device) {
                continue;
            }
            self.used[device] = true;
            let next_from = match self.slots.get(slot + 1) {
                Some(&next) if next == want => position + 1,
                _ => 0,
            };
            let placed = self.place(slot + 1, next_from);
            self.used[device] = false;
            self.give_back(device);
            match placed {
                Some(false) => {}
                other => return other,
            }
        }
        Some(false)
    }

    /// Takes what `device` consumes from the counters, if every one of them has enough left.
    fn take(&mut self, device: usize) -> bool {
        let consumes = &self.node.devices[device].consumes;
        let enough = consumes.iter().all(|(set, counters)| {
            let Some(left) = self.left.get(set) else {
                return false;
            };
            counters
                .iter()
                .all(|(name, value)| left.get(name).is_some_and(|l| l >= value))
        });
        if enough {
            for (set, counters) in consumes {
                let left = self.left.get_mut(set).expect("checked above");
                for (name, value) in counters {
                    *left.get_mut(name).expect("checked above") -= value;
                }
            }
        }
        enough
    }

    fn give_back(&mut self, device: usize) {
        for (set, counters) in &self.node.devices[device].consumes {
            let left = self.left.get_mut(set).expect("taken before");
            for (name, value) in counters {
                *left.get_mut(name).expect("taken before") += value;
            }
        }
    }
}

/// Whether every want (`count` distinct devices from its candidates) can be met at once:
/// a bipartite matching of the wants' slots to devices.
pub(crate) fn distinct(wants: &[(Vec<usize>, u64)]) -> bool {
    let slots: Vec<&Vec<usize>> = wants
        .iter()
        .flat_map(|(devices, count)| std::iter::repeat_n(devices, *count as usize))
        .collect();
    let mut owner: HashMap<usize, usize> = HashMap::new();
    fn augment(
        slot: usize,
        slots: &[&Vec<usize>],
        owner: &mut HashMap<usize, usize>,
        seen: &mut BTreeSet<usize>,
    ) -> bool {
        for &device in slots[slot] {
            if !seen.insert(device) {
                continue;
            }
            let free = match owner.get(&device) {
                None => true,
                Some(&other) => augment(other, slots, owner, seen),
            };
            if free {
                owner.insert(device, slot);
                return true;
            }
        }
        false
    }
    (0..slots.len()).all(|slot| augment(slot, &slots, &mut owner, &mut BTreeSet::new()))
}
