//! Backend-neutral parameters and rows: a [`Value`] is what either back end binds or answers for
//! one column, and a [`Row`]'s typed getters accept both schemas' column types (SQLite keeps
//! booleans as integers; both keep JSON as text).

use crate::store::{StoreError, StoreResult};

/// One parameter or column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bytes(Vec<u8>),
    Bool(bool),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(v.clone())
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Value::Bytes(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// One answered row, its columns in the statement's order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row(pub(crate) Vec<Value>);

impl Row {
    fn at(&self, i: usize) -> StoreResult<&Value> {
        self.0
            .get(i)
            .ok_or_else(|| StoreError::Corrupt(format!("no column {i} in a row")))
    }

    fn wrong(i: usize, want: &str, got: &Value) -> StoreError {
        StoreError::Corrupt(format!("column {i}: expected {want}, found {got:?}"))
    }

    pub(crate) fn opt_i64(&self, i: usize) -> StoreResult<Option<i64>> {
        match self.at(i)? {
            Value::Null => Ok(None),
            Value::Int(v) => Ok(Some(*v)),
            other => Err(Row::wrong(i, "an integer", other)),
        }
    }

    pub(crate) fn i64(&self, i: usize) -> StoreResult<i64> {
        self.opt_i64(i)?
            .ok_or_else(|| Row::wrong(i, "an integer", &Value::Null))
    }

    /// A boolean column, or SQLite's integer for one.
    pub(crate) fn bool(&self, i: usize) -> StoreResult<bool> {
        match self.at(i)? {
            Value::Bool(v) => Ok(*v),
            Value::Int(v) => Ok(*v != 0),
            other => Err(Row::wrong(i, "a boolean", other)),
        }
    }

    pub(crate) fn opt_text(&self, i: usize) -> StoreResult<Option<String>> {
        match self.at(i)? {
            Value::Null => Ok(None),
            Value::Text(v) => Ok(Some(v.clone())),
            other => Err(Row::wrong(i, "text", other)),
        }
    }

    pub(crate) fn text(&self, i: usize) -> StoreResult<String> {
        self.opt_text(i)?
            .ok_or_else(|| Row::wrong(i, "text", &Value::Null))
    }

    /// A BLOB (SQLite) or BYTEA (PostgreSQL) column.
    pub(crate) fn bytes(&self, i: usize) -> StoreResult<Vec<u8>> {
        match self.at(i)? {
            Value::Bytes(v) => Ok(v.clone()),
            other => Err(Row::wrong(i, "bytes", other)),
        }
    }

    /// A count kept as an integer, back into its Rust type; out of range is a corrupt row.
    pub(crate) fn count<T: TryFrom<i64>>(&self, i: usize) -> StoreResult<T> {
        let v = self.i64(i)?;
        T::try_from(v).map_err(|_| StoreError::Corrupt(format!("column {i}: {v} is out of range")))
    }

    pub(crate) fn opt_count<T: TryFrom<i64>>(&self, i: usize) -> StoreResult<Option<T>> {
        match self.opt_i64(i)? {
            None => Ok(None),
            Some(_) => self.count(i).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getters_accept_both_schemas_column_types() {
        let row = Row(vec![
            Value::Int(1),
            Value::Bool(false),
            Value::Null,
            Value::Text("x".into()),
        ]);
        assert!(row.bool(0).unwrap());
        assert!(!row.bool(1).unwrap());
        assert_eq!(row.opt_i64(2).unwrap(), None);
        assert_eq!(row.opt_text(2).unwrap(), None);
        assert_eq!(row.text(3).unwrap(), "x");
        assert!(row.i64(2).is_err());
        assert!(row.text(0).is_err());
        assert!(row.i64(9).is_err());
        assert_eq!(row.count::<u32>(0).unwrap(), 1);
        assert_eq!(row.opt_count::<u32>(2).unwrap(), None);
        assert!(Row(vec![Value::Int(-1)]).count::<u64>(0).is_err());
        assert_eq!(Row(vec![Value::Bytes(vec![7])]).bytes(0).unwrap(), vec![7]);
    }
}
