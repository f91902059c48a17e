//! The size limits of a value built from input: the language's functions and every decoder of
//! YAML or JSON text (in the language and in the providers) count against the same numbers, so
//! that the same hostile input is refused the same way wherever it is read.

/// The most values (scalars and collections) one built or decoded value holds: beyond it a
/// typo, or a few bytes of nested aliases, would exhaust memory.
pub const MAX_ELEMENTS: usize = 1_000_000;
/// The most bytes of text one built or decoded value holds.
pub const MAX_STRING_BYTES: usize = 64 << 20;

/// Which limit a decoded document went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeLimit {
    #[error("the document expands to more than {MAX_ELEMENTS} values (aliases included)")]
    Elements,
    #[error(
        "the document expands to more than {} MiB of text (aliases included)",
        MAX_STRING_BYTES >> 20
    )]
    TextBytes,
}

/// What a decoded value holds so far, each alias counted as the copy of what it names: a
/// decoder adds to it as it builds, so that it stops before memory runs out, not after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecodeCost {
    pub elements: usize,
    pub bytes: usize,
}

impl DecodeCost {
    pub const ONE_ELEMENT: DecodeCost = DecodeCost {
        elements: 1,
        bytes: 0,
    };

    /// One scalar of `bytes` bytes of text.
    pub fn scalar(bytes: usize) -> DecodeCost {
        DecodeCost { elements: 1, bytes }
    }

    /// Adds `other`; an error once the total is past a limit.
    pub fn add(&mut self, other: DecodeCost) -> Result<(), DecodeLimit> {
        self.elements = self.elements.saturating_add(other.elements);
        self.bytes = self.bytes.saturating_add(other.bytes);
        if self.elements > MAX_ELEMENTS {
            return Err(DecodeLimit::Elements);
        }
        if self.bytes > MAX_STRING_BYTES {
            return Err(DecodeLimit::TextBytes);
        }
        Ok(())
    }

    /// What was added since `earlier`, a copy of this total taken before.
    pub fn since(self, earlier: DecodeCost) -> DecodeCost {
        DecodeCost {
            elements: self.elements.saturating_sub(earlier.elements),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_past_either_limit_names_that_limit() {
        let mut cost = DecodeCost::default();
        assert_eq!(cost.add(DecodeCost::scalar(MAX_STRING_BYTES)), Ok(()));
        assert_eq!(cost.add(DecodeCost::scalar(1)), Err(DecodeLimit::TextBytes));
        let mut cost = DecodeCost::default();
        let many = DecodeCost {
            elements: MAX_ELEMENTS + 1,
            bytes: 0,
        };
        assert_eq!(cost.add(many), Err(DecodeLimit::Elements));
        assert!(
            DecodeLimit::TextBytes
                .to_string()
                .contains("more than 64 MiB of text")
        );
    }
}
