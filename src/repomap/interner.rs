//! Identifier interning: every distinct name once, with dense ids from 0.
//!
//! A warm start interns every name of every file (hundreds of thousands at 10k files),
//! so names live back to back in one buffer and the table holds only ids: no allocation
//! per name, and a fraction of the memory of a map from strings. A loaded interner
//! builds its table when first asked for a name: a warm start whose map is reused asks
//! for none.

use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

use hashbrown::HashTable;

/// The interned names, shared with results that may still name identifiers.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Names {
    text: String,
    /// Identifier id -> (start, length) in `text`.
    #[serde(with = "super::cache::word_bytes")]
    spans: Vec<(u32, u32)>,
}

impl Names {
    pub fn get(&self, id: u32) -> &str {
        let (start, len) = self.spans[id as usize];
        self.text
            .get(start as usize..(start + len) as usize)
            .unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }
}

#[derive(Default)]
pub struct Interner {
    /// Copied on write only while a result holds it during a refresh.
    names: Arc<Names>,
    /// Name -> id, over every name of `names`.
    table: OnceLock<HashTable<u32>>,
    hasher: foldhash::fast::FixedState,
}

impl Interner {
    /// An interner holding `names` under their ids (a saved interner, loaded).
    pub(crate) fn from_names(names: Names) -> Interner {
        Interner {
            names: Arc::new(names),
            ..Interner::default()
        }
    }

    fn table(&self) -> &HashTable<u32> {
        self.table.get_or_init(|| {
            let (hasher, names) = (&self.hasher, &self.names);
            let mut table = HashTable::with_capacity(names.len());
            for id in 0..names.len() as u32 {
                table.insert_unique(hasher.hash_one(names.get(id)), id, |&id| {
                    hasher.hash_one(names.get(id))
                });
            }
            table
        })
    }

    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        let hash = self.hasher.hash_one(name);
        if let Some(&id) = self.table().find(hash, |&id| self.names.get(id) == name) {
            return id;
        }
        let names = Arc::make_mut(&mut self.names);
        let id = names.spans.len() as u32;
        names
            .spans
            .push((names.text.len() as u32, name.len() as u32));
        names.text.push_str(name);
        let (hasher, names) = (&self.hasher, &*names);
        if let Some(table) = self.table.get_mut() {
            table.insert_unique(hash, id, |&id| hasher.hash_one(names.get(id)));
        }
        id
    }

    pub fn get(&self, name: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(name);
        self.table()
            .find(hash, |&id| self.names.get(id) == name)
            .copied()
    }

    pub fn names(&self) -> &Arc<Names> {
        &self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_shared_names_are_copied_on_write() {
        let mut i = Interner::default();
        let a = i.intern("alpha");
        let b = i.intern("beta");
        assert_eq!((a, b, i.intern("alpha")), (0, 1, 0));
        let snapshot = Arc::clone(i.names());
        let c = i.intern("gamma");
        assert_eq!(i.get("gamma"), Some(c));
        assert_eq!(i.get("delta"), None);
        assert_eq!(snapshot.len(), 2);
        assert_eq!((snapshot.get(a), i.names().get(c)), ("alpha", "gamma"));
        for n in 0..10_000 {
            assert_eq!(i.intern(&format!("name{n}")), 3 + n);
        }
        assert_eq!(i.get("name9999"), Some(10_002));
        let loaded = Interner::from_names((**i.names()).clone());
        assert_eq!(loaded.get("name9999"), Some(10_002));
        assert_eq!(loaded.get("beta"), Some(b));
    }
}
