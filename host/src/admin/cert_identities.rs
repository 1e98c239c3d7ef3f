//! `/v1/admin/cert-identities` (admin): client certificates mapped to a team and a role, as keys
//! are. Create (by SAN URI, SAN DNS name, key pin, or a PEM certificate whose key is pinned),
//! list, get, delete, through `crate::services::CertIdentities`. A deletion is immediate: when the
//! call returns, the certificate no longer authenticates. Identities declared in the config file
//! are listed but deleted there, not here (409).

use crate::server::params::Query;
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::domain::Role;
use crate::server::body;
use crate::server::error::ApiError;
use crate::state::AppState;
use crate::store::{CertIdentity, CertSource, NewCertIdentity, TeamId};
use crate::tls::{CertMatch, PeerCert};

/// Largest PEM certificate accepted for pinning.
const MAX_PEM: usize = 64 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    team_id: String,
    name: String,
    role: Role,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    dns: Option<String>,
    #[serde(default)]
    spki_sha256: Option<String>,
    /// A PEM certificate: its SubjectPublicKeyInfo is pinned.
    #[serde(default)]
    certificate: Option<String>,
}

pub async fn create(
    State(app): State<AppState>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let c: Create =
        body::read_json(&headers, req, &app.config().server, "certificate identity").await?;
    let given = [
        c.uri.is_some(),
        c.dns.is_some(),
        c.spki_sha256.is_some(),
        c.certificate.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(ApiError::invalid(
            "uri",
            "Give exactly one of `uri` (a SAN URI such as a SPIFFE ID), `dns` (a SAN DNS name), \
             `spki_sha256` (a key pin) or `certificate` (a PEM certificate whose key is pinned).",
        ));
    }
    let matcher = if let Some(pem) = &c.certificate {
        if pem.len() > MAX_PEM {
            return Err(ApiError::invalid(
                "certificate",
                format!("At most {MAX_PEM} bytes of PEM."),
            ));
        }
        let peer = PeerCert::from_pem(pem).map_err(|e| ApiError::invalid("certificate", e))?;
        CertMatch::Spki(peer.spki_sha256)
    } else {
        let (kind, value) = match (&c.uri, &c.dns, &c.spki_sha256) {
            (Some(v), _, _) => ("uri", v),
            (_, Some(v), _) => ("dns", v),
            (_, _, Some(v)) => ("spki_sha256", v),
            _ => unreachable!("exactly one was checked above"),
        };
        CertMatch::parse(kind, value).map_err(|e| ApiError::invalid(kind, e))?
    };
    let identity = app
        .cert_identities()
        .create(NewCertIdentity {
            name: c.name,
            team_id: TeamId(c.team_id),
            role: c.role,
            matcher,
            source: CertSource::Api,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(view(&identity))).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    team_id: Option<String>,
}

pub async fn list(
    State(app): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let data: Vec<Value> = app
        .cert_identities()
        .list(q.team_id.as_deref())
        .await?
        .iter()
        .map(view)
        .collect();
    Ok(Json(json!({"object": "list", "data": data})))
}

pub async fn get(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(view(&app.cert_identities().get(&id).await?)))
}

pub async fn delete(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let identity = app.cert_identities().delete(&id).await?;
    Ok(Json(
        json!({"id": identity.id, "object": "cert_identity", "deleted": true}),
    ))
}

fn view(c: &CertIdentity) -> Value {
    json!({
        "id": c.id,
        "object": "cert_identity",
        "name": c.name,
        "team_id": c.team_id.0,
        "role": c.role.as_str(),
        "match": {"kind": c.matcher.kind(), "value": c.matcher.value()},
        "source": c.source.as_str(),
        "created_at": c.created_at / 1000,
    })
}
