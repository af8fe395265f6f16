//! The engine's one error type: a spec that cannot be simulated. Messages name the field
//! and the value; the bindings map it to Python's `opendcn.ConfigError`.

use std::fmt;

/// An invalid simulation spec: which field, which value, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub field: String,
    pub value: String,
    pub reason: String,
}

impl SpecError {
    pub fn new(field: impl Into<String>, value: impl fmt::Debug, reason: impl Into<String>) -> Self {
        // a string value is shown as it was given, without Debug's quotes
        let v = format!("{value:?}");
        let value = match v.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
            Some(inner) => inner.to_string(),
            None => v,
        };
        SpecError { field: field.into(), value, reason: reason.into() }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (got {})", self.field, self.reason, self.value)
    }
}

impl std::error::Error for SpecError {}
