//! How a configuration is made comparable with what a cloud reports: clouds keep no empty
//! collections, no `false` for an unset flag, and maps in their own order.

use gpustack_protocol::Value;
use indexmap::IndexMap;

/// The configuration with these attributes unset where they are empty lists or maps.
pub fn unset_empty(map: &mut IndexMap<String, Value>, names: &[&str]) {
    for name in names {
        let empty = match map.get(*name) {
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::List(l)) => l.is_empty(),
            _ => false,
        };
        if empty {
            map.insert((*name).to_owned(), Value::Null);
        }
    }
}

/// These flags unset where they are `false`.
pub fn unset_false(map: &mut IndexMap<String, Value>, names: &[&str]) {
    for name in names {
        if map.get(*name).and_then(Value::as_bool) == Some(false) {
            map.insert((*name).to_owned(), Value::Null);
        }
    }
}

/// These maps with their keys in order.
pub fn sort_maps(map: &mut IndexMap<String, Value>, names: &[&str]) {
    for name in names {
        if let Some(Value::Object(m)) = map.get_mut(*name) {
            m.sort_keys();
        }
    }
}

/// An import ID of `N` parts separated by `/`, none of them empty.
pub fn split_id<const N: usize>(id: &str) -> Option<[&str; N]> {
    let parts: Vec<&str> = id.split('/').collect();
    let parts: [&str; N] = parts.try_into().ok()?;
    parts.iter().all(|p| !p.is_empty()).then_some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empties_and_false_become_unset_and_maps_sorted() {
        let mut map = IndexMap::from([
            ("labels".to_owned(), Value::Object(IndexMap::new())),
            ("zones".to_owned(), Value::List(vec![])),
            ("spot".to_owned(), Value::Bool(false)),
            (
                "tags".to_owned(),
                Value::Object(IndexMap::from([
                    ("b".to_owned(), Value::string("2")),
                    ("a".to_owned(), Value::string("1")),
                ])),
            ),
        ]);
        unset_empty(&mut map, &["labels", "zones", "tags"]);
        unset_false(&mut map, &["spot"]);
        sort_maps(&mut map, &["tags"]);
        assert!(map["labels"].is_null() && map["zones"].is_null() && map["spot"].is_null());
        let keys: Vec<&String> = map["tags"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "b"]);
    }

    #[test]
    fn ids_have_exactly_their_parts() {
        assert_eq!(split_id::<3>("rg/aks/gpu"), Some(["rg", "aks", "gpu"]));
        assert_eq!(split_id::<3>("rg/aks"), None);
        assert_eq!(split_id::<2>("rg//"), None);
        assert_eq!(split_id::<2>("rg/"), None);
    }
}
