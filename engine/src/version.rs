//! `required_version` constraints, in Terraform's syntax: `">= 0.1, < 2"`, `"~> 0.1"`.

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

fn parse(version: &str) -> Option<Vec<u64>> {
    let core = version.trim().trim_start_matches('v');
    let core = core.split(['-', '+']).next()?;
    core.split('.').map(|p| p.parse().ok()).collect()
}

fn padded(mut v: Vec<u64>, len: usize) -> Vec<u64> {
    v.resize(len.max(v.len()), 0);
    v
}

/// Checks this gpustack's version against a constraint; the error says why it does not match.
pub fn check_required(constraint: &str) -> Result<(), String> {
    check(VERSION, constraint)
}

fn check(current: &str, constraint: &str) -> Result<(), String> {
    let have =
        parse(current).ok_or_else(|| format!("cannot parse the running version {current}"))?;
    for part in constraint.split(',') {
        let part = part.trim();
        let (op, wanted) = ["~>", ">=", "<=", "!=", ">", "<", "="]
            .iter()
            .find_map(|op| part.strip_prefix(op).map(|rest| (*op, rest)))
            .unwrap_or(("=", part));
        let want = parse(wanted).ok_or_else(|| {
            format!("\"{part}\" is not a version constraint such as \">= 0.1\" or \"~> 1.2\".")
        })?;
        let len = have.len().max(want.len());
        let (h, w) = (padded(have.clone(), len), padded(want.clone(), len));
        let ok = match op {
            ">=" => h >= w,
            "<=" => h <= w,
            ">" => h > w,
            "<" => h < w,
            "!=" => h != w,
            "~>" => {
                // ~> 1.2 allows 1.x ≥ 1.2; ~> 1.2.3 allows 1.2.x ≥ 1.2.3.
                let fixed = want.len().saturating_sub(1).max(1);
                h >= w && h[..fixed.min(len)] == w[..fixed.min(len)]
            }
            _ => h == w,
        };
        if !ok {
            return Err(format!(
                "This stack requires gpustack {constraint}; this is gpustack {current}."
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn constraints() {
        assert!(check("0.1.0", ">= 0.1").is_ok());
        assert!(check("0.1.0", ">= 0.2").is_err());
        assert!(check("0.1.5", "~> 0.1.2").is_ok());
        assert!(check("0.2.0", "~> 0.1.2").is_err());
        assert!(check("1.4.0", "~> 1.2").is_ok());
        assert!(check("2.0.0", "~> 1.2").is_err());
        assert!(check("0.1.0", ">= 0.1, < 1").is_ok());
        assert!(check("0.1.0", "banana").is_err());
    }
}
