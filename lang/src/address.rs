//! Resource instance addresses as plans, the state and the command line write them:
//! `module.pool["t4"].aks_nodepool.gpu["ip-10-0-1-5.ec2.internal"]`.
//!
//! **Invariant:** an instance key is any string (dots, slashes, brackets and quotes included):
//! keys are written as JSON strings and parsed back the same way, never split on `.`.

use std::fmt;

/// An instance key: `[0]` or `["a.b"]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Index(usize),
    Name(String),
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Index(i) => write!(f, "[{i}]"),
            Key::Name(name) => write!(f, "[{}]", serde_json::Value::String(name.clone())),
        }
    }
}

/// One step of an address: a name, with the instance key that follows it, if any.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Step {
    pub name: String,
    pub key: Option<Key>,
}

/// Why a text is not an address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseAddressError {
    #[error("\"{0}\" is not an address: a name is missing")]
    MissingName(String),
    #[error("\"{0}\" is not an address: a key is not closed")]
    UnclosedKey(String),
    #[error("\"{0}\" is not an address: \".\" expected after a key")]
    DotExpected(String),
}

/// An address split into its steps: `module.a["x"].t.n[0]` → `module`, `a["x"]`, `t`, `n[0]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address(pub Vec<Step>);

impl Address {
    /// Parses an address; the error says where it stops making sense.
    pub fn parse(text: &str) -> Result<Self, ParseAddressError> {
        let mut steps = Vec::new();
        let mut rest = text;
        loop {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let name = &rest[..end];
            if name.is_empty() {
                return Err(ParseAddressError::MissingName(text.to_owned()));
            }
            rest = &rest[end..];
            let key = if let Some(after) = rest.strip_prefix('[') {
                let (key, used) = parse_key(after)
                    .ok_or_else(|| ParseAddressError::UnclosedKey(text.to_owned()))?;
                rest = &after[used..];
                Some(key)
            } else {
                None
            };
            steps.push(Step {
                name: name.to_owned(),
                key,
            });
            if rest.is_empty() {
                return Ok(Address(steps));
            }
            rest = rest
                .strip_prefix('.')
                .ok_or_else(|| ParseAddressError::DotExpected(text.to_owned()))?;
        }
    }

    /// The address without the instance key of its last step.
    pub fn without_instance_key(&self) -> Address {
        let mut steps = self.0.clone();
        if let Some(last) = steps.last_mut() {
            last.key = None;
        }
        Address(steps)
    }

    /// The instance key of the last step.
    pub fn instance_key(&self) -> Option<&Key> {
        self.0.last().and_then(|s| s.key.as_ref())
    }

    /// True when `self` is `other` or inside it (`module.a` holds `module.a.t.n[0]`; `t.n`
    /// holds `t.n["x"]`).
    pub fn starts_with(&self, other: &Address) -> bool {
        if other.0.len() > self.0.len() {
            return false;
        }
        other.0.iter().zip(&self.0).enumerate().all(|(i, (o, s))| {
            o.name == s.name && (o.key.is_none() && i + 1 == other.0.len() || o.key == s.key)
        })
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            f.write_str(&step.name)?;
            if let Some(key) = &step.key {
                write!(f, "{key}")?;
            }
        }
        Ok(())
    }
}

/// A key after its `[`: a number or a JSON string, then `]`; returns it and the bytes used.
fn parse_key(text: &str) -> Option<(Key, usize)> {
    if let Some(body) = text.strip_prefix('"') {
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    let quoted = &text[..i + 2];
                    let name: String = serde_json::from_str(quoted).ok()?;
                    let after = &text[i + 2..];
                    return after.starts_with(']').then(|| (Key::Name(name), i + 3));
                }
                _ => escaped = false,
            }
        }
        return None;
    }
    let end = text.find(']')?;
    let index = text[..end].trim().parse().ok()?;
    Some((Key::Index(index), end + 1))
}

/// `aks_nodepool.gpu["a.b"]` → `aks_nodepool.gpu`; text that is not an address is returned
/// as it is.
pub fn strip_instance_key(address: &str) -> String {
    match Address::parse(address) {
        Ok(a) if a.instance_key().is_some() => a.without_instance_key().to_string(),
        _ => address.to_owned(),
    }
}

/// An HCL identifier: a letter or `_`, then letters, digits, `_` and `-`.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_any_string_round_trip() {
        for text in [
            r#"local_file.a"#,
            r#"local_file.a[3]"#,
            r#"aws_x.y["ip-10-0-1-5.ec2.internal"]"#,
            r#"module.pool["t4"].aks_nodepool.gpu["a/b]c.\"d\""]"#,
            r#"data.kubernetes_nodes.gpu"#,
        ] {
            let address = Address::parse(text).unwrap();
            assert_eq!(address.to_string(), text);
        }
        assert_eq!(
            strip_instance_key(r#"aws_x.y["ip-10-0-1-5.ec2.internal"]"#),
            "aws_x.y"
        );
        assert_eq!(
            strip_instance_key(r#"module.m["a.b"].t.n"#),
            r#"module.m["a.b"].t.n"#
        );
        assert!(Address::parse("a..b").is_err());
        assert!(Address::parse(r#"a["x"#).is_err());
    }

    #[test]
    fn containment_follows_steps_not_text() {
        let module = Address::parse("module.a").unwrap();
        let inside = Address::parse(r#"module.a.t.n["x"]"#).unwrap();
        let other = Address::parse("module.ab.t.n").unwrap();
        assert!(inside.starts_with(&module));
        assert!(!other.starts_with(&module));
        let resource = Address::parse("t.n").unwrap();
        assert!(
            Address::parse(r#"t.n["k.z"]"#)
                .unwrap()
                .starts_with(&resource)
        );
    }
}
