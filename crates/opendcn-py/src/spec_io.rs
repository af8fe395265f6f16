//! Reading a spec dict and raising spec errors, shared by every engine's bindings.
//!
//! A spec is a dict of scalars, strings and 1-D `int64` numpy columns. Anything the
//! engine cannot run becomes `EngineSpecError(field, value, reason)`, where `value` is
//! shown as `SpecError::new` shows it (a string without quotes). The reasons are part of
//! the Python surface (the tests match them): a missing field is "required spec field",
//! a scalar of the wrong type "wrong type", a column that is not a 1-D int64 array
//! "expected a 1-D int64 numpy array".

use numpy::PyReadonlyArray1;
use opendcn_core::units::NONE;
use opendcn_core::SpecError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::EngineSpecError;

/// An engine's `SpecError` as `EngineSpecError(field, value, reason)`.
pub(crate) fn spec_err(e: SpecError) -> PyErr {
    EngineSpecError::new_err((e.field, e.value, e.reason))
}

/// `EngineSpecError(field, value, reason)`.
pub(crate) fn bad(field: &str, value: impl std::fmt::Debug, reason: &str) -> PyErr {
    spec_err(SpecError::new(field, value, reason))
}

fn missing(key: &str) -> PyErr {
    bad(key, "missing", "required spec field")
}

/// A required scalar or string.
pub(crate) fn scalar<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    let item = d.get_item(key)?.ok_or_else(|| missing(key))?;
    item.extract().map_err(|_| bad(key, item.to_string(), "wrong type"))
}

/// An optional scalar: `default` when the key is absent (a `None` value is a wrong type).
pub(crate) fn opt_scalar<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str, default: T) -> PyResult<T> {
    opt_scalar_or(d, key, default, "wrong type")
}

/// `opt_scalar` with its own reason for a value of the wrong type.
pub(crate) fn opt_scalar_or<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str, default: T, reason: &str) -> PyResult<T> {
    match d.get_item(key)? {
        Some(item) => item.extract().map_err(|_| bad(key, item.to_string(), reason)),
        None => Ok(default),
    }
}

/// An optional scalar: `default` when the key is absent or its value is `None`.
pub(crate) fn opt_or_none<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str, default: T) -> PyResult<T> {
    match d.get_item(key)? {
        Some(item) if !item.is_none() => item.extract().map_err(|_| bad(key, item.to_string(), "wrong type")),
        _ => Ok(default),
    }
}

/// A required 1-D int64 numpy column.
pub(crate) fn col(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<i64>> {
    let item = d.get_item(key)?.ok_or_else(|| missing(key))?;
    let a: PyReadonlyArray1<i64> = item.extract().map_err(|_| bad(key, "?", "expected a 1-D int64 numpy array"))?;
    Ok(a.as_slice()?.to_vec())
}

/// An optional 1-D int64 numpy column: empty when the key is absent.
pub(crate) fn opt_col(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<i64>> {
    match d.get_item(key)? {
        Some(_) => col(d, key),
        None => Ok(Vec::new()),
    }
}

/// Ids of the packet engine: a negative value is `NONE` (no port, no peer, wildcard);
/// `NONE` itself and above is "value too large".
pub(crate) fn u32s(v: Vec<i64>, field: &str) -> PyResult<Vec<u32>> {
    v.into_iter().map(|x| if x < 0 { Ok(NONE) } else if x >= NONE as i64 { Err(bad(field, x, "value too large")) } else { Ok(x as u32) }).collect()
}

/// Non-negative values ("must be non-negative").
pub(crate) fn u64s(v: Vec<i64>, field: &str) -> PyResult<Vec<u64>> {
    v.into_iter().map(|x| if x < 0 { Err(bad(field, x, "must be non-negative")) } else { Ok(x as u64) }).collect()
}

/// Values that must fit `T` ("out of range").
pub(crate) fn ints<T: TryFrom<i64>>(v: Vec<i64>, field: &str) -> PyResult<Vec<T>> {
    v.into_iter().map(|x| T::try_from(x).map_err(|_| bad(field, x, "out of range"))).collect()
}

/// A required column of packet-engine ids (`u32s`).
pub(crate) fn u32_col(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<u32>> {
    u32s(col(d, key)?, key)
}

/// A required column of non-negative values (`u64s`).
pub(crate) fn u64_col(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<u64>> {
    u64s(col(d, key)?, key)
}

/// A required column whose values must fit `T` (`ints`).
pub(crate) fn int_col<T: TryFrom<i64>>(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<T>> {
    ints(col(d, key)?, key)
}

/// The infrastructure services of a slotted engine spec (same keys as the packet
/// engine's; absent or `None` = off / default).
pub(crate) fn services(d: &Bound<'_, PyDict>) -> PyResult<opendcn_core::spec::Services> {
    Ok(opendcn_core::spec::Services {
        congestion_detection: opt_or_none(d, "congestion_detection", false)? || opt_or_none(d, "pushback", false)?,
        pushback: opt_or_none(d, "pushback", false)?,
        flow_pausing: opt_or_none(d, "flow_pausing", false)?,
        elephant_bytes: opt_or_none(d, "elephant_bytes", 100_000u64)?,
        eqo_interval_ps: opt_or_none(d, "eqo_interval_ps", 0u64)?,
        offload_queues: opt_or_none(d, "offload_queues", 0u32)?,
    })
}
