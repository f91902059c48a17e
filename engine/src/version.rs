//! gpustack's own version, and the gpustack block's `required_version` checked against it.

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Checks this gpustack's version against a `required_version` constraint of the gpustack
/// block, with the rules Terraform's constraints follow; the error says why it does not match.
pub fn check_required(constraint: &str) -> Result<(), RequiredVersionError> {
    check(VERSION, constraint)
}

/// Why a stack's `required_version` refuses this gpustack.
#[derive(Debug, thiserror::Error)]
pub enum RequiredVersionError {
    #[error("This stack requires gpustack {constraint}; this is gpustack {current}.")]
    Unmet { constraint: String, current: String },
    #[error(transparent)]
    Invalid(#[from] gpustack_lang::config::version::ConstraintError),
}

fn check(current: &str, constraint: &str) -> Result<(), RequiredVersionError> {
    if gpustack_lang::config::version::meets(current, constraint)? {
        Ok(())
    } else {
        Err(RequiredVersionError::Unmet {
            constraint: constraint.to_owned(),
            current: current.to_owned(),
        })
    }
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
