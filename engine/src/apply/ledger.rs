//! The state as apply changes it: each object recorded once through an index of its slot,
//! written at most once a second and at the end, never after the lock is lost.

use super::*;

/// The state and everything that writes to it, shared by both phases of an apply.
pub(super) struct Ledger<'s, 'p> {
    pub(super) state: &'s mut State,
    pub(super) salt: Salt,
    pub(super) persist: Persist<'p>,
    pub(super) counts: Counts,
    pub(super) diags: Vec<Diag>,
    pub(super) results: Vec<ChangeResult>,
    /// The serial of the state the plan was made from: what seeded the objects it creates.
    pub(super) plan_serial: u64,
    /// The resource types whose providers draw secrets from the seed (see
    /// `Attribute::drawn`): their objects keep the serial that seeded them.
    pub(super) drawing_types: HashSet<String>,
    /// Changes recorded and not yet written.
    pub(super) dirty: bool,
    /// A new state not written yet: it is, before the first object is changed.
    pub(super) fresh: bool,
    /// When the state was last written, for [`Ledger::flush_soon`].
    pub(super) last_save: Option<std::time::Instant>,
    pub(super) slots: Slots,
    pub(super) fence: Arc<Fence>,
    /// Changes were recorded that no write has saved.
    pub(super) unsaved: bool,
}

/// Where each object is in `State::resources`, so that recording each of thousands of changes
/// costs constant time instead of a scan of the state.
///
/// **Invariant:** `by_address` names the one live entry of each address. An entry no address
/// names (deleted or replaced) stays where it is until [`Ledger::compact`], before the next
/// write, so that the others keep their order.
pub(super) struct Slots {
    pub(super) by_address: HashMap<String, usize>,
    /// The slots of each resource block's instances, in the state's order; a slot that is no
    /// longer live is skipped when read.
    pub(super) by_config: HashMap<String, Vec<usize>>,
    pub(super) stale: bool,
}

impl Slots {
    /// The first entry of an address is the live one, as a scan of the state would find it.
    pub(super) fn of(state: &State) -> Self {
        Self {
            by_address: state.positions(),
            by_config: crate::instances::positions_by_config(&state.resources),
            stale: false,
        }
    }

    /// A new address's entry, at `slot`.
    pub(super) fn insert(&mut self, address: &str, slot: usize) {
        self.by_address.insert(address.to_owned(), slot);
        self.by_config
            .entry(gpustack_lang::address::strip_instance_key(address))
            .or_default()
            .push(slot);
    }

    pub(super) fn is_live(&self, slot: usize, r: &ResourceState) -> bool {
        self.by_address.get(&r.address) == Some(&slot)
    }
}

/// How long recorded changes may wait for the next state write while the apply goes on.
/// Writing the whole state after every one of thousands of changes costs time quadratic in
/// the state's size; an object created in the moments before a crash carries the stack's
/// mark, and the next plan adopts it.
pub(super) const PERSIST_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

impl Ledger<'_, '_> {
    /// The object's sensitive parts are kept as digests, their paths beside them.
    pub(super) fn record(&mut self, done: &Done, dependencies: &[String]) {
        let Some(change) = &done.change else { return };
        if done.touched || done.diagnostics.iter().any(Diagnostic::is_error) {
            self.results.push(ChangeResult {
                address: change.address.clone(),
                type_name: change.type_name.clone(),
                actions: change.actions.clone(),
                errors: done
                    .diagnostics
                    .iter()
                    .filter(|d| d.is_error())
                    .map(|d| format!("{}: {}", d.summary, d.detail))
                    .collect(),
            });
        }
        if done.touched {
            match &done.new_state {
                Some(new_state) => {
                    let encoded = encode(new_state, &self.salt);
                    let mut entry = crate::sensitive::state_entry(
                        &change.address,
                        &change.type_name,
                        &change.provider,
                        encoded.json,
                        &encoded.sensitive,
                        dependencies.to_vec(),
                    );
                    entry.tainted = done.tainted;
                    // An object keeps the seed it was made from until it is made again.
                    entry.seed_serial = if !self.drawing_types.contains(&change.type_name) {
                        None
                    } else if change.actions.contains(&Action::Create) {
                        Some(self.plan_serial)
                    } else {
                        self.get(&change.address).and_then(|e| e.seed_serial)
                    };
                    self.put(entry);
                }
                None => self.remove(&change.address),
            }
            if done.diagnostics.iter().all(|d| !d.is_error()) {
                if change.importing.is_some() {
                    self.counts.imported += 1;
                }
                for action in &change.actions {
                    match action {
                        Action::Create => self.counts.added += 1,
                        Action::Update => self.counts.changed += 1,
                        Action::Delete => self.counts.destroyed += 1,
                        Action::Forget => self.counts.forgotten += 1,
                        Action::NoOp | Action::Read => {}
                    }
                }
            } else if change.actions == [Action::Create, Action::Delete] {
                // A create-before-destroy replacement whose old object could not go: the new
                // one was made (a first step that fails touches nothing).
                self.counts.added += 1;
            }
            self.dirty = true;
        }
    }

    /// Writes a new state before the first change, so that the lineage the change marks its
    /// object with is on record when the object exists.
    pub(super) fn before_first_change(&mut self) {
        // Without the lock no change will be made (each provider call checks the fence).
        if self.fresh && !self.fence.is_lost() {
            self.fresh = false;
            self.save();
        }
    }

    /// Writes what was recorded since the last write. Called once per finished node, so that
    /// the thousand instances of one `for_each` cost one write, not a thousand.
    pub(super) fn flush(&mut self) {
        if self.dirty {
            self.save();
        }
    }

    /// Writes what was recorded if the last write is [`PERSIST_INTERVAL`] old; the apply's
    /// last [`Ledger::flush`] writes the rest.
    pub(super) fn flush_soon(&mut self) {
        if self
            .last_save
            .is_none_or(|at| at.elapsed() >= PERSIST_INTERVAL)
        {
            self.flush();
        }
    }

    pub(super) fn get(&self, address: &str) -> Option<&ResourceState> {
        self.slots
            .by_address
            .get(address)
            .map(|&slot| &self.state.resources[slot])
    }

    pub(super) fn get_mut(&mut self, address: &str) -> Option<&mut ResourceState> {
        self.slots
            .by_address
            .get(address)
            .map(|&slot| &mut self.state.resources[slot])
    }

    /// The recorded instances of a resource block, in the state's order.
    pub(super) fn instances<'l>(
        &'l self,
        config_address: &str,
    ) -> impl Iterator<Item = &'l ResourceState> {
        self.slots
            .by_config
            .get(config_address)
            .into_iter()
            .flatten()
            .filter_map(|&slot| {
                let r = &self.state.resources[slot];
                self.slots.is_live(slot, r).then_some(r)
            })
    }

    /// Records what each configured managed resource's block says of `lifecycle { destroy }`
    /// on its instances, so that once the block is gone the state still knows.
    pub(super) fn keep_skip_destroy(&mut self, stack: &gpustack_lang::config::Stack) {
        for module in &stack.modules {
            let prefix = module.prefix();
            for r in module.resources.values() {
                let skip = r.lifecycle().skip_destroy;
                let config_address = format!("{prefix}{}", r.local_address());
                let addresses: Vec<String> = self
                    .instances(&config_address)
                    .filter(|entry| entry.skip_destroy != skip)
                    .map(|entry| entry.address.clone())
                    .collect();
                for address in addresses {
                    if let Some(entry) = self.get_mut(&address) {
                        entry.skip_destroy = skip;
                        self.dirty = true;
                    }
                }
            }
        }
    }

    pub(super) fn put(&mut self, entry: ResourceState) {
        match self.get_mut(&entry.address) {
            Some(existing) => *existing = entry,
            None => {
                let slot = self.state.resources.len();
                self.slots.insert(&entry.address, slot);
                self.state.resources.push(entry);
            }
        }
    }

    pub(super) fn remove(&mut self, address: &str) {
        if self.slots.by_address.remove(address).is_some() {
            self.slots.stale = true;
        }
    }

    /// Drops the entries of deleted objects, which [`Ledger::remove`] left in place.
    pub(super) fn compact(&mut self) {
        if !self.slots.stale {
            return;
        }
        let slots = &self.slots;
        let mut slot = 0;
        self.state.resources.retain(|r| {
            let live = slots.is_live(slot, r);
            slot += 1;
            live
        });
        self.slots = Slots::of(self.state);
    }

    pub(super) fn save(&mut self) {
        self.compact();
        self.dirty = false;
        self.last_save = Some(std::time::Instant::now());
        if self.fence.is_lost() {
            if !self.unsaved {
                self.diags.push(Diag::error(
                    None,
                    "State not written",
                    "This run no longer holds the state lock: whoever holds it now may have written the state since, and this run's state must not replace it.",
                ));
            }
            self.unsaved = true;
            return;
        }
        self.state.serial += 1;
        match (self.persist)(self.state) {
            Ok(()) => self.unsaved = false,
            Err(e) => {
                self.unsaved = true;
                self.diags.push(Diag::error(
                    None,
                    "Cannot save the state",
                    gpustack_protocol::error_chain(&e),
                ));
            }
        }
    }
}
