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

/// Bytes of memory available to a new allocation (`MemAvailable` of `/proc/meminfo`), or
/// `None` where the system does not say.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

/// Refuse, before allocating, structures of about `need` bytes that the available memory
/// cannot hold: a [`SpecError`] naming `field` and `value` with the estimate (`what` says
/// what would be built). An allocation the machine cannot serve would abort the process.
pub fn check_memory(field: &str, value: impl fmt::Debug, need: u64, what: &str) -> Result<(), SpecError> {
    match available_memory() {
        Some(avail) if need > avail => Err(SpecError::new(field, value, format!(
            "{what} needs about {:.1} GB, more than the {:.1} GB of memory available", need as f64 / 1e9,
            avail as f64 / 1e9))),
        _ => Ok(()),
    }
}
