//! What the generated native packers (`generated/rust/py_pack/<version>.rs`,
//! codegen/targets/rust/py_pack.py) share: the argument that tells "not given" from `None`,
//! the conversions of Python values to the borrowed fields of a generated Rust frame, and the
//! way back to the generated Python `pack` for everything the fast path does not take.
//!
//! A packer is a fast path, not a judge (as `sql_rows`): a conversion that does not find
//! exactly the type it expects, or an encode the Rust codec refuses, returns `None` here and
//! the packer calls the frame's Python `_pack_python` with the arguments as given, which
//! returns the same bytes or raises the precise `EncodeError` (or `TypeError`). So both paths
//! give the same bytes and the same errors (tests/native/test_native_pack.py).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};

/// One argument of a packer: `Missing` when the caller did not pass it (the field's
/// default), `Given` otherwise -- `None` included, which is not always the default.
pub enum Arg<'py> {
    Missing,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Arg<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Arg::Given(obj.to_owned()))
    }
}

impl<'py> Arg<'py> {
    /// The value of a field that is always there: the default when not given, else `f` of
    /// the value (`None` when `f` does not take it).
    #[inline]
    pub fn or<'b, T>(
        &'b self,
        default: T,
        f: impl FnOnce(&'b Bound<'py, PyAny>) -> Option<T>,
    ) -> Option<T> {
        match self {
            Arg::Missing => Some(default),
            Arg::Given(o) => f(o),
        }
    }

    /// The value of an optional (or nullable) field: absent when not given or `None`.
    #[inline]
    pub fn opt<'b, T>(
        &'b self,
        f: impl FnOnce(&'b Bound<'py, PyAny>) -> Option<T>,
    ) -> Option<Option<T>> {
        match self {
            Arg::Given(o) if !o.is_none() => f(o).map(Some),
            _ => Some(None),
        }
    }

    /// Whether the caller passed no context (or `None`): only then the fast path runs.
    #[inline]
    pub fn absent(&self) -> bool {
        match self {
            Arg::Missing => true,
            Arg::Given(o) => o.is_none(),
        }
    }

    /// The items of a list or tuple argument, held so that fields can borrow from them:
    /// `Some(None)` when not given or `None` (the generated Python takes `None` as the
    /// empty list, or as absent for an optional list), `None` for anything else.
    #[inline]
    pub fn items(&self) -> Option<Option<Vec<Bound<'py, PyAny>>>> {
        match self {
            Arg::Missing => Some(None),
            Arg::Given(o) if o.is_none() => Some(None),
            Arg::Given(o) => {
                if let Ok(list) = o.cast::<PyList>() {
                    Some(Some(list.iter().collect()))
                } else if let Ok(tuple) = o.cast::<PyTuple>() {
                    Some(Some(tuple.iter().collect()))
                } else {
                    None
                }
            }
        }
    }
}

/// A `str` as UTF-8 (not a subclass's `__str__`: exactly what `.encode()` gives).
#[inline]
pub fn string<'b>(o: &'b Bound<'_, PyAny>) -> Option<&'b str> {
    o.cast_exact::<PyString>().ok()?.to_str().ok()
}

/// The bytes of a `bytes` object (a `bytearray` or `memoryview` takes the Python path).
#[inline]
pub fn bytes<'b>(o: &'b Bound<'_, PyAny>) -> Option<&'b [u8]> {
    Some(o.cast::<PyBytes>().ok()?.as_bytes())
}

/// A `bool` (the Python path takes any truthy value: it decides the rest).
#[inline]
pub fn boolean(o: &Bound<'_, PyAny>) -> Option<bool> {
    Some(o.cast_exact::<PyBool>().ok()?.is_true())
}

/// An integer of the field's Rust type (an `int`, an `IntEnum` member, a `bool`), `None`
/// when out of its range: the codec and the Python path check the IDL's narrower bounds.
#[inline]
pub fn int<'py, T: for<'a> FromPyObject<'a, 'py>>(o: &Bound<'py, PyAny>) -> Option<T> {
    if o.is_instance_of::<pyo3::types::PyFloat>() {
        return None; // `struct.pack` refuses a float: the Python path raises
    }
    o.extract::<T>().ok()
}

/// The bytes of `frame`'s Python `_pack_python` with the arguments as given: what the
/// fast path does not take (module comment).
pub fn fallback<'py>(
    py: Python<'py>,
    module: &str,
    frame: &str,
    args: &[(&str, &Arg<'py>)],
) -> PyResult<Bound<'py, PyBytes>> {
    let kwargs = PyDict::new(py);
    for (name, arg) in args {
        if let Arg::Given(value) = arg {
            kwargs.set_item(*name, value)?;
        }
    }
    let pack = py.import(module)?.getattr(frame)?.getattr("_pack_python")?;
    Ok(pack.call((), Some(&kwargs))?.cast_into::<PyBytes>()?)
}
