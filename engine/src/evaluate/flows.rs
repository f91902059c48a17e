//! Which inputs of a plan (the files `file()` and friends read, the values of impure calls)
//! went into which values, so that a saved plan keeps an input that reached a secret only as
//! a digest: a file whose base64 is a sensitive attribute is as secret as the attribute,
//! though neither text contains the other.
//!
//! The walk evaluates one declaration at a time (a node's synchronous part never interleaves
//! with another's), so what the record gained between the marks around a declaration's
//! evaluation is what its value came from: the inputs it read, and those of every
//! declaration it referenced. A declaration whose value holds a secret (a sensitive variable,
//! output or attribute, a provider's sensitive answer) makes all of them secret; so does the
//! argument of a `sensitive()` call, by its own marks.
//!
//! **Invariant:** declaration marks never nest: each is settled before the next declaration
//! starts, and settling forgets the record it covered.

use foldhash::HashMap;
use std::collections::BTreeSet;

/// The kinds of declarations whose values expressions reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Decl {
    Var,
    Local,
    Output,
    Resource,
    Data,
    Provider,
}

#[derive(Default)]
pub(crate) struct Flows {
    /// Each input's key once; the record and the sets hold positions in it.
    keys: Vec<String>,
    ids: HashMap<String, u32>,
    /// Every input read, or reached through a reference, since the current declaration began.
    record: Vec<u32>,
    /// What each evaluated declaration's value came from, directly or through what it
    /// references, by module and kind, then name. Only declarations that came from some input.
    sources: HashMap<(usize, Decl), HashMap<String, Vec<u32>>>,
    /// Inputs a part of which reached a secret.
    secret: BTreeSet<u32>,
}

impl Flows {
    /// Notes that the evaluation read the input recorded under `key`.
    pub(crate) fn read(&mut self, key: &str) {
        let id = match self.ids.get(key) {
            Some(&id) => id,
            None => {
                let id = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
                self.keys.push(key.to_owned());
                self.ids.insert(key.to_owned(), id);
                id
            }
        };
        self.record.push(id);
    }

    pub(crate) fn mark(&self) -> usize {
        self.record.len()
    }

    /// Everything read since `mark` reached a secret.
    pub(crate) fn taint_since(&mut self, mark: usize) {
        let start = mark.min(self.record.len());
        self.secret.extend(self.record[start..].iter().copied());
    }

    /// A reference to a declaration: what its value came from is now read too.
    pub(crate) fn reach(&mut self, module: usize, decl: Decl, name: &str) {
        if self.keys.is_empty() {
            return;
        }
        if let Some(ids) = self.sources.get(&(module, decl)).and_then(|m| m.get(name)) {
            self.record.extend(ids.iter().copied());
        }
    }

    /// A reference to every declaration of a kind in a module (`module.call` as an object).
    pub(crate) fn reach_all(&mut self, module: usize, decl: Decl) {
        if let Some(all) = self.sources.get(&(module, decl)) {
            let ids: Vec<u32> = all.values().flatten().copied().collect();
            self.record.extend(ids);
        }
    }

    /// A declaration's evaluation (or a part of it) is over: what was read since `mark` joins
    /// what its value came from, all of it secret when `secret` says its value holds one.
    pub(crate) fn settle(
        &mut self,
        mark: usize,
        module: usize,
        decl: Decl,
        name: &str,
        secret: bool,
    ) {
        if self.keys.is_empty() {
            return;
        }
        let start = mark.min(self.record.len());
        let mut read: Vec<u32> = self.record.drain(start..).collect();
        let known = self.sources.get(&(module, decl)).and_then(|m| m.get(name));
        if read.is_empty() && known.is_none() {
            return;
        }
        if let Some(known) = known {
            read.extend(known.iter().copied());
        }
        read.sort_unstable();
        read.dedup();
        if secret {
            self.secret.extend(read.iter().copied());
        }
        self.sources
            .entry((module, decl))
            .or_default()
            .insert(name.to_owned(), read);
    }

    /// The keys of the inputs that reached a secret.
    pub(crate) fn secret_keys(&self) -> impl Iterator<Item = &str> {
        self.secret
            .iter()
            .filter_map(|&id| self.keys.get(id as usize).map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_taints_what_it_read_and_what_its_references_read() {
        let mut flows = Flows::default();
        let mark = flows.mark();
        flows.read("cert.pem");
        flows.settle(mark, 0, Decl::Local, "cert", false);
        let mark = flows.mark();
        flows.read("key.pem");
        flows.settle(mark, 0, Decl::Local, "key", false);
        let mark = flows.mark();
        flows.read("plain.txt");
        flows.settle(mark, 0, Decl::Local, "plain", false);
        assert_eq!(flows.secret_keys().count(), 0);

        // A resource reads the key through a reference, and its value holds a secret.
        let mark = flows.mark();
        flows.reach(0, Decl::Local, "key");
        flows.settle(mark, 0, Decl::Resource, "local_file.a", true);
        // A sensitive() call inside another declaration taints only its argument's reads.
        let mark = flows.mark();
        flows.reach(0, Decl::Local, "plain");
        let inner = flows.mark();
        flows.reach(0, Decl::Local, "cert");
        flows.taint_since(inner);
        flows.settle(mark, 0, Decl::Local, "mixed", false);
        assert_eq!(
            flows.secret_keys().collect::<Vec<_>>(),
            ["cert.pem", "key.pem"]
        );
    }
}
