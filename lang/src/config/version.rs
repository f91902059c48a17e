//! Version constraints as Terraform reads `required_version` (hashicorp/go-version): a comma
//! separated list of `OP VERSION` (`=`, `!=`, `>`, `>=`, `<`, `<=`, `~>`; none is `=`), each of
//! which must hold.

use std::cmp::Ordering;

/// A version: numeric segments (as many as written) and a pre-release tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    segments: Vec<u64>,
    prerelease: Option<String>,
}

impl Version {
    /// `1.11`, `v1.5.7`, `1.6.0-beta1`, `1.2.3+build`.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let text = text.split_once('+').map_or(text, |(core, _)| core);
        // The pre-release starts at the first character that is not a digit or a dot.
        let split = text
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(text.len());
        let (core, rest) = text.split_at(split);
        let prerelease = match rest {
            "" => None,
            rest => {
                let tag = rest.strip_prefix('-').unwrap_or(rest);
                let valid = !tag.is_empty()
                    && tag
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '~'));
                if !valid {
                    return None;
                }
                Some(tag.to_owned())
            }
        };
        let segments: Vec<u64> = core
            .split('.')
            .map(|s| s.parse().ok())
            .collect::<Option<_>>()?;
        Some(Self {
            segments,
            prerelease,
        })
    }

    /// The segments padded to three, as go-version compares them.
    fn padded(&self) -> Vec<u64> {
        let mut segments = self.segments.clone();
        if segments.len() < 3 {
            segments.resize(3, 0);
        }
        segments
    }

    fn compare(&self, other: &Self) -> Ordering {
        let (a, b) = (self.padded(), other.padded());
        let len = a.len().max(b.len());
        for i in 0..len {
            match a.get(i).unwrap_or(&0).cmp(b.get(i).unwrap_or(&0)) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        match (&self.prerelease, &other.prerelease) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(a), Some(b)) => compare_prerelease(a, b),
        }
    }
}

/// Pre-release tags compared part by part, numeric parts as numbers (semver's order).
fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(x), Ok(y)) => x.cmp(&y),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => x.cmp(y),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

/// Why a version constraint could not be checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstraintError {
    #[error("{0} is not a version")]
    Version(String),
    #[error(
        "\"{0}\" is not a version constraint such as \">= 1.5\", \"~> 1.6\" or \">= 1.5, < 2.0\"."
    )]
    Constraint(String),
}

/// Whether `version` meets `constraint`; an error names the part that is not a constraint.
pub fn meets(version: &str, constraint: &str) -> Result<bool, ConstraintError> {
    let have =
        Version::parse(version).ok_or_else(|| ConstraintError::Version(version.to_owned()))?;
    let mut all = true;
    for part in constraint.split(',') {
        let part = part.trim();
        let (op, wanted) = ["~>", ">=", "<=", "!=", ">", "<", "="]
            .iter()
            .find_map(|op| part.strip_prefix(op).map(|rest| (*op, rest)))
            .unwrap_or(("=", part));
        let want = Version::parse(wanted)
            .filter(|_| !wanted.trim().is_empty())
            .ok_or_else(|| ConstraintError::Constraint(part.to_owned()))?;
        // A constraint without a pre-release never matches a pre-release version, and one with
        // a pre-release only those of the same release.
        let prerelease_ok = match (&want.prerelease, &have.prerelease) {
            (Some(_), Some(_)) => want.padded() == have.padded(),
            (None, Some(_)) => false,
            _ => true,
        };
        let order = have.compare(&want);
        let ok = prerelease_ok
            && match op {
                ">=" => order != Ordering::Less,
                "<=" => order != Ordering::Greater,
                ">" => order == Ordering::Greater,
                "<" => order == Ordering::Less,
                "!=" => order != Ordering::Equal,
                "~>" => pessimistic(&have, &want),
                _ => order == Ordering::Equal,
            };
        all &= ok;
    }
    Ok(all)
}

/// `~> 1.2.3` allows 1.2.x from 1.2.3 on; `~> 1.2` allows 1.x from 1.2 on; `~> 1` any
/// version from 1.0 on, as go-version has it.
fn pessimistic(have: &Version, want: &Version) -> bool {
    if want.prerelease.is_some() && have.prerelease.is_none() {
        return false;
    }
    if have.compare(want) == Ordering::Less {
        return false;
    }
    let (h, w) = (have.padded(), want.padded());
    if w.len() > h.len() {
        return false;
    }
    let fixed = want.segments.len().saturating_sub(1);
    h[..fixed] == w[..fixed]
}

#[cfg(test)]
mod tests {
    use super::meets;

    #[test]
    fn constraints_as_terraform_reads_them() {
        let ok = |v: &str, c: &str| meets(v, c).unwrap();
        assert!(ok("1.11.0", ">= 1.5"));
        assert!(ok("1.11.0", ">=1.5.7"));
        assert!(ok("1.11.0", ">= 1.5, < 2.0"));
        assert!(!ok("1.11.0", ">= 1.5, < 1.10"));
        assert!(ok("1.11.0", "~> 1.6"));
        assert!(!ok("1.11.0", "~> 1.6.0"));
        assert!(ok("1.11.3", "~> 1.11.0"));
        assert!(ok("2.0.0", "~> 1"));
        assert!(!ok("1.11.0", "~> 2.0"));
        assert!(ok("1.11.0", "1.11.0"));
        assert!(ok("1.11.0", "= 1.11"));
        assert!(ok("1.11.0", "v1.11.0"));
        assert!(!ok("1.11.0", "!= 1.11.0"));
        assert!(ok("1.11.0", "> 1.11.0-beta1"));
        assert!(!ok("1.11.0", "~> 1.11.0-beta1"));
        assert!(!ok("1.11.0-rc1", ">= 1.0"));
        assert!(meets("1.11.0", "banana").is_err());
        assert!(meets("1.11.0", ">=").is_err());
        assert!(meets("1.11.0", ">= 1.5,").is_err());
    }
}
