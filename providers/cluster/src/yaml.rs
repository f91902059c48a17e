//! YAML text from configuration or a chart (a `kubectl_manifest` body, chart values, a chart's
//! rendered output) decoded as serde_yaml_ng decodes it, with what the decoded value holds
//! counted as it is built against the limits every decoded value has
//! ([`gpustack_protocol::limits`]). serde_yaml_ng on its own bounds how many aliases a document
//! replays, not how much they copy: one anchored 2 MB string named by a few thousand aliases
//! would exhaust memory.

use gpustack_protocol::limits::DecodeCost;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

type Json = serde_json::Value;

/// One YAML document as JSON, as `serde_yaml_ng::from_str` decodes it; past a limit, an error
/// that names it and the line and column where it was reached.
pub fn from_str(text: &str) -> Result<Json, serde_yaml_ng::Error> {
    from_str_within(text, &mut DecodeCost::default())
}

/// As [`from_str`], counting on from `budget`, what the documents decoded before this one
/// hold: a hundred documents each under the limits would exhaust memory together.
pub fn from_str_within(text: &str, budget: &mut DecodeCost) -> Result<Json, serde_yaml_ng::Error> {
    Bounded { budget }.deserialize(serde_yaml_ng::Deserializer::from_str(text))
}

/// Builds a JSON value as `serde_json::Value`'s own `Deserialize` does, counting each part
/// before it is kept.
struct Bounded<'b> {
    budget: &'b mut DecodeCost,
}

impl Bounded<'_> {
    fn count<E: de::Error>(&mut self, cost: DecodeCost) -> Result<(), E> {
        self.budget.add(cost).map_err(E::custom)
    }

    /// A scalar as `serde_json::Value` takes it (a float that is not finite is null, an
    /// integer past 64 bits an error).
    fn scalar<'de, E: de::Error, T: IntoDeserializer<'de, de::value::Error>>(
        mut self,
        value: T,
    ) -> Result<Json, E> {
        self.count(DecodeCost::ONE_ELEMENT)?;
        Json::deserialize(value.into_deserializer()).map_err(E::custom)
    }

    fn nested(&mut self) -> Bounded<'_> {
        Bounded {
            budget: &mut *self.budget,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Json;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // serde_json's own words, so that a YAML tag is refused in the same message as before.
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        self.scalar(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        self.scalar(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        self.scalar(v)
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Json, E> {
        self.scalar(v)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Json, E> {
        self.scalar(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        self.scalar(v)
    }

    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<Json, E> {
        self.count(DecodeCost::scalar(v.len()))?;
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(mut self, v: String) -> Result<Json, E> {
        self.count(DecodeCost::scalar(v.len()))?;
        Ok(Json::String(v))
    }

    fn visit_unit<E: de::Error>(mut self) -> Result<Json, E> {
        self.count(DecodeCost::ONE_ELEMENT)?;
        Ok(Json::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Json, A::Error> {
        self.count(DecodeCost::ONE_ELEMENT)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.nested())? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Json, A::Error> {
        self.count(DecodeCost::ONE_ELEMENT)?;
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.count(DecodeCost {
                elements: 0,
                bytes: key.len(),
            })?;
            let value = map.next_value_seed(self.nested())?;
            object.insert(key, value);
        }
        Ok(Json::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One anchored scalar of `scalar_bytes` bytes, named by `aliases` aliases.
    fn long_scalar_aliases(scalar_bytes: usize, aliases: usize) -> String {
        let names: Vec<String> = (0..aliases).map(|i| format!("k{i}: *a")).collect();
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    x: &a \"{}\"\ndata: {{{}}}\n",
            "x".repeat(scalar_bytes),
            names.join(",")
        )
    }

    #[test]
    fn values_decode_as_serde_yaml_ng_decodes_them() {
        let text = "a: 1\nb: [true, null, 1.5, .inf, 18446744073709551615]\nc: {d: \"e\"}\n? 7\n: seven\nf: &f x\ng: *f\n";
        let expected: Json = serde_yaml_ng::from_str(text).unwrap();
        assert_eq!(from_str(text).unwrap(), expected);
        for hostile in ["!custom x", "a: 340282366920938463463374607431768211455"] {
            assert_eq!(
                from_str(hostile).unwrap_err().to_string(),
                serde_yaml_ng::from_str::<Json>(hostile)
                    .unwrap_err()
                    .to_string()
            );
        }
    }

    #[test]
    fn a_long_scalar_named_by_thousands_of_aliases_is_refused_at_the_text_limit() {
        let err = from_str(&long_scalar_aliases(2_000_000, 3000))
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 64 MiB of text"), "{err}");
        assert!(
            err.starts_with("data.k32: ") && err.contains("at line 6"),
            "{err}"
        );
    }

    #[test]
    fn aliases_of_a_long_list_are_refused_at_the_element_limit() {
        let text = format!(
            "a: &a [{}]\nb: [{}]\n",
            vec!["0"; 1000].join(","),
            vec!["*a"; 1100].join(",")
        );
        let err = from_str(&text).unwrap_err().to_string();
        assert!(err.contains("more than 1000000 values"), "{err}");
    }

    #[test]
    fn documents_decoded_within_one_budget_share_its_limits() {
        let document = long_scalar_aliases(1_000_000, 40);
        let mut budget = DecodeCost::default();
        assert!(from_str_within(&document, &mut budget).is_ok());
        let err = from_str_within(&document, &mut budget).unwrap_err();
        assert!(
            err.to_string().contains("more than 64 MiB of text"),
            "{err}"
        );
    }
}
