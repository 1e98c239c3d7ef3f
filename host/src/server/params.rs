//! Parameters of the admin and reporting APIs that are not plain JSON types: instants (Unix
//! seconds or RFC 3339 text, in queries and bodies), money (decimal currency units) and the
//! `Query` extractor that refuses in the convention's error shape.

use serde_json::Value;

use crate::server::error::ApiError;
use crate::store::{Micros, UnixMillis};

/// An instant as a client may write it: Unix seconds (integer) or RFC 3339 text
/// (`2026-11-22T10:00:00Z`).
pub fn instant(param: &str, text: &str) -> Result<UnixMillis, ApiError> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<i64>() {
        return secs
            .checked_mul(1000)
            .ok_or_else(|| ApiError::invalid(param, format!("`{param}` is out of range.")));
    }
    let t = humantime::parse_rfc3339_weak(text).map_err(|_| {
        ApiError::invalid(
            param,
            format!(
                "`{param}` must be Unix seconds or an RFC 3339 time such as 2026-11-22T10:00:00Z."
            ),
        )
    })?;
    let ms = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| ApiError::invalid(param, format!("`{param}` is before 1970.")))?
        .as_millis();
    i64::try_from(ms).map_err(|_| ApiError::invalid(param, format!("`{param}` is out of range.")))
}

/// [`instant`] for a JSON value (number or string).
pub fn instant_value(param: &str, v: &Value) -> Result<UnixMillis, ApiError> {
    match v {
        Value::Number(n) => match n.as_i64() {
            Some(secs) => instant(param, &secs.to_string()),
            None => Err(ApiError::invalid(
                param,
                format!("`{param}` must be whole Unix seconds."),
            )),
        },
        Value::String(s) => instant(param, s),
        _ => Err(ApiError::invalid(
            param,
            format!("`{param}` must be Unix seconds or an RFC 3339 time."),
        )),
    }
}

/// Money as people write it (currency units, e.g. `12.5`) into micros.
pub fn money(param: &str, v: f64) -> Result<Micros, ApiError> {
    crate::budget::micros(v).ok_or_else(|| {
        ApiError::invalid(param, format!("`{param}` must be a non-negative amount."))
    })
}

/// A count given as text (a query parameter): an integer from 1 to `max`, else a 400 naming
/// `param`.
pub fn count(param: &str, text: &str, max: usize) -> Result<usize, ApiError> {
    text.parse::<usize>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            ApiError::invalid(
                param,
                format!("`{param}` must be an integer from 1 to {max}."),
            )
        })
}

/// Query parameters read into `T`, refused with a 400 in the convention's error shape (axum's
/// own `Query` answers in plain text).
pub struct Query<T>(pub T);

impl<T: serde::de::DeserializeOwned, S: Send + Sync> axum::extract::FromRequestParts<S>
    for Query<T>
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(Query(v)),
            Err(e) => Err(ApiError::invalid("query", e.body_text())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_in_both_forms() {
        assert_eq!(instant("from", "1700000000").unwrap(), 1_700_000_000_000);
        assert_eq!(
            instant("from", "2023-11-14T22:13:20Z").unwrap(),
            1_700_000_000_000
        );
        assert!(instant("from", "yesterday").is_err());
        assert_eq!(
            instant("from", "nope").unwrap_err().param.as_deref(),
            Some("from")
        );
        assert_eq!(money("budget", 1.5).unwrap(), 1_500_000);
        assert!(money("budget", -1.0).is_err());
        assert!(money("budget", f64::NAN).is_err());
    }
}
