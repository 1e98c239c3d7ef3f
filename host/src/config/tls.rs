//! `[tls]` (the listener's certificate, client certificates, CRLs, handshake timeout, resumption,
//! reload), `[[cert_identities]]` (certificates mapped to a team and role, like keys) and the
//! outbound `tls = { ca, cert, key }` a model or `[webhooks]` may carry. Files are read here, at
//! validation, so a bad PEM or a key that does not match its certificate stops the start with
//! the file named, among every other error. docs/TLS.md has the reference.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::domain::Role;
use crate::tls::{CertMatch, ClientAuth, ClientSpec, ServerSpec};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTls {
    cert: String,
    key: String,
    #[serde(default = "default_client_auth")]
    client_auth: String,
    #[serde(default)]
    client_ca: Vec<String>,
    #[serde(default)]
    crls: Vec<String>,
    #[serde(default = "default_handshake_timeout_ms")]
    handshake_timeout_ms: u64,
    #[serde(default = "default_true")]
    session_resumption: bool,
    /// How often the files are checked for changes; 0: on SIGHUP only.
    #[serde(default = "default_reload_poll_ms")]
    reload_poll_ms: u64,
}

fn default_client_auth() -> String {
    "off".into()
}
fn default_handshake_timeout_ms() -> u64 {
    10_000
}
fn default_true() -> bool {
    true
}
fn default_reload_poll_ms() -> u64 {
    1_000
}

/// `[tls]`, validated (its files read and checked once).
#[derive(Debug, Clone)]
pub struct TlsConfig {
    pub spec: ServerSpec,
    /// From TCP accept to a finished handshake; a silent or dribbling client is cut off.
    pub handshake_timeout: Duration,
    /// `None`: reload on SIGHUP only.
    pub reload_poll: Option<Duration>,
}

pub(super) fn validate(
    raw: RawTls,
    base: &Path,
    err: &mut impl FnMut(String, &str),
) -> Option<TlsConfig> {
    let client_auth = match raw.client_auth.as_str() {
        "off" => ClientAuth::Off,
        "optional" => ClientAuth::Optional,
        "required" => ClientAuth::Required,
        _ => {
            err(
                "tls.client_auth".into(),
                "must be \"off\", \"optional\" or \"required\"",
            );
            return None;
        }
    };
    if client_auth != ClientAuth::Off && raw.client_ca.is_empty() {
        err(
            "tls.client_ca".into(),
            "client_auth needs at least one CA file to verify client certificates against",
        );
    }
    if client_auth == ClientAuth::Off && !raw.crls.is_empty() {
        err(
            "tls.crls".into(),
            "CRLs apply to client certificates: set client_auth to \"optional\" or \"required\"",
        );
    }
    if raw.handshake_timeout_ms == 0 || raw.handshake_timeout_ms > 120_000 {
        err(
            "tls.handshake_timeout_ms".into(),
            "must be between 1 and 120000",
        );
    }
    let spec = ServerSpec {
        cert: base.join(&raw.cert),
        key: base.join(&raw.key),
        client_auth,
        client_ca: raw.client_ca.iter().map(|p| base.join(p)).collect(),
        crls: raw.crls.iter().map(|p| base.join(p)).collect(),
        session_resumption: raw.session_resumption,
    };
    if let Err(errors) = spec.load() {
        for e in errors.0 {
            err("tls".into(), &e.to_string());
        }
    }
    Some(TlsConfig {
        spec,
        handshake_timeout: Duration::from_millis(raw.handshake_timeout_ms),
        reload_poll: (raw.reload_poll_ms > 0).then(|| Duration::from_millis(raw.reload_poll_ms)),
    })
}

/// `tls = { ca = [...], cert = "...", key = "..." }` for an outbound connection.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClientTls {
    ca: Vec<String>,
    #[serde(default)]
    cert: Option<String>,
    #[serde(default)]
    key: Option<String>,
}

/// Checks an outbound `tls` table at `path` (e.g. `models[1].tls`) by loading it.
pub(super) fn validate_client(
    raw: RawClientTls,
    path: &str,
    base: &Path,
    err: &mut impl FnMut(String, &str),
) -> Option<ClientSpec> {
    if raw.ca.is_empty() {
        err(
            format!("{path}.ca"),
            "must name at least one CA file (the system trust store is not used)",
        );
        return None;
    }
    let identity = match (raw.cert, raw.key) {
        (Some(c), Some(k)) => Some((base.join(c), base.join(k))),
        (None, None) => None,
        _ => {
            err(path.into(), "cert and key go together");
            return None;
        }
    };
    let spec = ClientSpec {
        ca: raw.ca.iter().map(|p| base.join(p)).collect(),
        identity,
    };
    match spec.load() {
        Ok(_) => Some(spec),
        Err(errors) => {
            for e in errors.0 {
                err(path.into(), &e.to_string());
            }
            None
        }
    }
}

/// `[[cert_identities]]`: a certificate matcher mapped to a team and a role.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCertIdentity {
    name: String,
    team: String,
    role: Role,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    dns: Option<String>,
    #[serde(default)]
    spki_sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertIdentityConfig {
    pub name: String,
    pub team: String,
    pub role: Role,
    pub matcher: CertMatch,
}

pub(super) fn validate_identities(
    raw: Vec<RawCertIdentity>,
    team_ids: &HashMap<String, usize>,
    err: &mut impl FnMut(String, &str),
) -> Vec<CertIdentityConfig> {
    let mut out = Vec::new();
    let mut seen: HashMap<CertMatch, usize> = HashMap::new();
    let mut names: HashMap<String, usize> = HashMap::new();
    for (i, c) in raw.into_iter().enumerate() {
        let p = format!("cert_identities[{i}]");
        if !team_ids.contains_key(&c.team) {
            err(
                format!("{p}.team"),
                &format!("`{}` is not one of the teams", c.team),
            );
        }
        if c.name.trim().is_empty() {
            err(format!("{p}.name"), "must not be empty");
        } else if let Some(j) = names.insert(c.name.clone(), i) {
            err(
                format!("{p}.name"),
                &format!("same name as cert_identities[{j}]"),
            );
        }
        let given: Vec<(&str, String)> = [
            ("uri", c.uri),
            ("dns", c.dns),
            ("spki_sha256", c.spki_sha256),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
        let [(kind, value)] = given.as_slice() else {
            err(
                p,
                "give exactly one of `uri`, `dns`, `spki_sha256` (what the certificate is recognised by)",
            );
            continue;
        };
        match CertMatch::parse(kind, value) {
            Ok(matcher) => {
                if let Some(j) = seen.insert(matcher.clone(), i) {
                    err(
                        format!("{p}.{kind}"),
                        &format!("same certificate match as cert_identities[{j}]"),
                    );
                }
                out.push(CertIdentityConfig {
                    name: c.name,
                    team: c.team,
                    role: c.role,
                    matcher,
                });
            }
            Err(e) => err(format!("{p}.{kind}"), &e),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    const BASE: &str = r#"
sovereign_id = "gw-1"
region = "r"
default_model = "m1"

[[models]]
id = "m1"
family = "f"
kind = "chat"
region = "r"
base_url = "http://127.0.0.1:9000/v1"

[[teams]]
id = "t"
"#;

    fn pem_pair() -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn bad_tls_files_are_each_named_with_every_other_error() {
        let dir = std::env::temp_dir().join(format!("sovereign-tls-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, _) = pem_pair();
        let (_, other_key) = pem_pair();
        std::fs::write(dir.join("server.pem"), &cert).unwrap();
        std::fs::write(dir.join("wrong.key"), &other_key).unwrap();
        std::fs::write(dir.join("garbage.pem"), "hello").unwrap();
        let text = format!(
            "{BASE}\n[tls]\ncert = \"server.pem\"\nkey = \"wrong.key\"\nclient_auth = \"required\"\n\
             client_ca = [\"garbage.pem\"]\ncrls = [\"missing.crl\"]\n\n\
             [[cert_identities]]\nname = \"x\"\nteam = \"nope\"\nrole = \"member\"\nuri = \"spiffe://a/b\"\ndns = \"a.b\"\n"
        );
        std::fs::write(dir.join("c.toml"), text).unwrap();
        let e = Config::load(&dir.join("c.toml")).unwrap_err().to_string();
        for needle in [
            "garbage.pem: no `BEGIN CERTIFICATE`",
            "missing.crl: No such file",
            "cert_identities[0].team",
            "cert_identities[0]: give exactly one",
        ] {
            assert!(e.contains(needle), "{needle} missing from:\n{e}");
        }
        // With the other files fixed, the key that does not match its certificate is named.
        let (ca, _) = pem_pair();
        std::fs::write(dir.join("garbage.pem"), ca).unwrap();
        let text = format!(
            "{BASE}\n[tls]\ncert = \"server.pem\"\nkey = \"wrong.key\"\nclient_auth = \"optional\"\nclient_ca = [\"garbage.pem\"]\n"
        );
        std::fs::write(dir.join("c.toml"), text).unwrap();
        let e = Config::load(&dir.join("c.toml")).unwrap_err().to_string();
        assert!(
            e.contains("wrong.key: this private key does not match the certificate"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
