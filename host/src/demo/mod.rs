//! `sovereign demo`: the gateway on embedded defaults in front of the simulated fleet, in one
//! process, with freshly generated keys — a newcomer's first run. The configuration it builds is
//! an ordinary config file, written to the data directory so it can be read and reused. With
//! `--tls`, a demo PKI (`pki`) is written under `<data-dir>/tls/` and the listener speaks HTTPS
//! with optional client certificates, one mapped to each demo role.

pub mod pki;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context as _;

use crate::auth;
use crate::simulator::fleet::{SimModel, demo_fleet};

/// Secrets of the keys a demo config accepts, by name.
pub struct DemoKeys {
    pub keys: Vec<(&'static str, &'static str, String)>,
}

impl DemoKeys {
    pub fn generate() -> DemoKeys {
        let keys = [
            ("admin", "admin"),
            ("member", "member"),
            ("auditor", "auditor"),
        ]
        .into_iter()
        .map(|(name, role)| (name, role, auth::generate_secret()))
        .collect();
        DemoKeys { keys }
    }
}

/// The demo PKI's files under `<data-dir>/tls/`.
pub struct DemoTls {
    pub dir: std::path::PathBuf,
}

/// The roles with a client certificate each, mapped by SAN URI `spiffe://demo.sovereign/<role>`;
/// `revoked` (in the CRL) and `expired` are mapped too, so the handshake is what refuses them.
pub const DEMO_CLIENTS: [(&str, &str); 5] = [
    ("admin", "admin"),
    ("member", "member"),
    ("auditor", "auditor"),
    ("revoked", "member"),
    ("expired", "member"),
];

/// The SAN URI of a demo client certificate.
pub fn demo_client_uri(name: &str) -> String {
    format!("spiffe://demo.sovereign/team/demo/{name}")
}

impl DemoTls {
    pub fn ca(&self) -> std::path::PathBuf {
        self.dir.join("ca.pem")
    }

    /// Writes a fresh demo PKI: `ca.pem`, `server.pem`/`.key` (for `localhost`, `127.0.0.1`,
    /// `::1`), `client-<name>.pem`/`.key` for each of [`DEMO_CLIENTS`], `crl.pem` (revoking
    /// `client-revoked`). Keys are written 0600.
    pub fn generate(data_dir: &Path) -> anyhow::Result<DemoTls> {
        use pki::{Authority, Leaf, Validity};
        let dir = data_dir.join("tls");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut ca = Authority::root("Sovereign demo root CA")?;
        let server = ca.issue(&Leaf::server(
            "localhost",
            &["localhost"],
            &[
                std::net::Ipv4Addr::LOCALHOST.into(),
                std::net::Ipv6Addr::LOCALHOST.into(),
            ],
        ))?;
        write(&dir.join("ca.pem"), &ca.cert_pem(), false)?;
        write(&dir.join("server.pem"), &server.chain_pem, false)?;
        write(&dir.join("server.key"), &server.key_pem, true)?;
        let mut revoked = Vec::new();
        for (name, _) in DEMO_CLIENTS {
            let mut leaf = Leaf::client(&format!("demo-{name}"));
            leaf.uris.push(demo_client_uri(name));
            if name == "expired" {
                leaf.validity = Validity::Expired;
            }
            let issued = ca.issue(&leaf)?;
            if name == "revoked" {
                revoked.push(issued.serial);
            }
            write(
                &dir.join(format!("client-{name}.pem")),
                &issued.chain_pem,
                false,
            )?;
            write(
                &dir.join(format!("client-{name}.key")),
                &issued.key_pem,
                true,
            )?;
        }
        write(&dir.join("crl.pem"), &ca.crl(&revoked)?, false)?;
        Ok(DemoTls { dir })
    }

    /// The `[tls]` section and `[[cert_identities]]` of the demo config.
    fn config(&self) -> String {
        let path = |f: &str| format!("{:?}", self.dir.join(f).display().to_string());
        let mut t = format!(
            "[tls]
cert = {}
key = {}
client_auth = \"optional\"
client_ca = [{}]
crls = [{}]

",
            path("server.pem"),
            path("server.key"),
            path("ca.pem"),
            path("crl.pem"),
        );
        for (name, role) in DEMO_CLIENTS {
            let _ = writeln!(
                t,
                "[[cert_identities]]
name = \"demo-{name}\"
team = \"demo\"
role = \"{role}\"
uri = \"{}\"
",
                demo_client_uri(name)
            );
        }
        t
    }
}

fn write(path: &Path, text: &str, secret: bool) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut f = options
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// The demo's routing document for the built-in rules router (written as `routing.yaml`).
pub const DEMO_ROUTING: &str = "\
# Written by `sovereign demo`: the built-in rules router's document. Routes are tried top to
# bottom; the first whose condition holds wins; else `default`.
name: sovereign-default
routes:
  - name: arabic
    condition: \"language == 'ar'\"
    model: jais-30b-chat
  - name: french
    condition: \"language == 'fr'\"
    model: magistral-small
  - name: small-prompts
    condition: \"prompt_tokens < 500\"
    model: llama-3.2-3b-instruct
default: qwen2.5-coder-32b
";

/// A complete gateway config (TOML) in front of a simulated fleet at `fleet_url`, routing with
/// the built-in rules router and [`DEMO_ROUTING`] (expected at `data_dir/routing.yaml`).
pub fn demo_config(
    listen: SocketAddr,
    fleet_url: &str,
    keys: &DemoKeys,
    data_dir: &Path,
    tls: Option<&DemoTls>,
) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Written by `sovereign demo`: the gateway in front of the simulated fleet.\n\
         sovereign_id = \"demo-riyadh-1\"\nregion = \"sa-riyadh-1\"\ndefault_model = \"jais-30b-chat\"\ndata_dir = {:?}\n\n\
         [server]\nlisten = \"{listen}\"\n\n\
         [routing]\ndocument = {:?}\ncache_dir = {:?}\n",
        data_dir.display().to_string(),
        data_dir.join("routing.yaml").display().to_string(),
        data_dir.join("policy-cache").display().to_string(),
    );
    // The built-in PII guardrail: cards and SSNs refused, national ids keep a request on local
    // models, everything else it finds redacted before a model sees it.
    t.push_str(
        "[guardrail]\nsettings = '{\"default\": \"redact\", \"entities\": {\"credit_card\": \"block\", \
         \"us_ssn\": \"block\", \"saudi_id\": \"flag\", \"emirates_id\": \"flag\", \
         \"egyptian_id\": \"flag\"}}'\n\n",
    );
    // Webhook receivers on this machine (a local chat-ops bridge, `nc -l`) are allowed here only.
    t.push_str("[webhooks]\nallow_loopback = true\n\n");
    for m in demo_fleet() {
        write_model(&mut t, &m, fleet_url);
    }
    let _ = writeln!(
        t,
        "[[teams]]\nid = \"demo\"\nname = \"Demo team\"\nplan = \"enterprise\"\n"
    );
    for (name, role, secret) in &keys.keys {
        let _ = writeln!(
            t,
            "[[keys]]\nname = \"{name}\"\nteam = \"demo\"\nrole = \"{role}\"\nhash = \"{}\"\n",
            auth::hash_for_config(secret)
        );
    }
    if let Some(tls) = tls {
        t.push_str(&tls.config());
    }
    t
}

fn write_model(t: &mut String, m: &SimModel, fleet_url: &str) {
    let langs: Vec<String> = m.languages.iter().map(|l| format!("\"{l}\"")).collect();
    let _ = writeln!(
        t,
        "[[models]]\nid = \"{}\"\nfamily = \"{}\"\nkind = \"{}\"\nlanguages = [{}]\nregion = \"{}\"\n\
         local = {}\nbase_url = \"{fleet_url}/v1\"\ninput_cost_per_mtok = {:?}\noutput_cost_per_mtok = {:?}\n\
         context_window = {}\n",
        m.id,
        m.family,
        m.kind.as_str(),
        langs.join(", "),
        m.region,
        m.local,
        m.input_cost_per_mtok,
        m.output_cost_per_mtok,
        m.context_window,
    );
}

/// The demo fleet as configured models (base URLs point nowhere): the candidates
/// `sovereign policy test` offers a router when no gateway config is given.
pub fn fleet_models() -> anyhow::Result<Vec<std::sync::Arc<crate::domain::ModelConfig>>> {
    let mut t = String::from(
        "sovereign_id = \"policy-test\"\nregion = \"sa-riyadh-1\"\ndefault_model = \"jais-30b-chat\"\n\n\
         [server]\nlisten = \"127.0.0.1:0\"\n\n",
    );
    for m in demo_fleet() {
        write_model(&mut t, &m, "http://127.0.0.1:9");
    }
    let config = crate::config::Config::parse(&t).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(config.models)
}

/// Writes the demo's config and routing document into `data_dir`; returns the config's path.
pub fn write_files(data_dir: &Path, config: &str) -> anyhow::Result<std::path::PathBuf> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating data directory {}", data_dir.display()))?;
    let routing = data_dir.join("routing.yaml");
    std::fs::write(&routing, DEMO_ROUTING)
        .with_context(|| format!("writing {}", routing.display()))?;
    let path = data_dir.join("demo-config.toml");
    std::fs::write(&path, config).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn the_demo_config_is_a_valid_config_accepting_its_keys() {
        let dir = std::env::temp_dir().join(format!("sovereign-demo-{}", std::process::id()));
        let keys = DemoKeys::generate();
        let text = demo_config(
            "127.0.0.1:0".parse().unwrap(),
            "http://127.0.0.1:9",
            &keys,
            &dir,
            None,
        );
        let path = write_files(&dir, &text).unwrap();
        let c = Config::load(&path).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(c.routing.as_ref().unwrap().document.as_deref() == Some(DEMO_ROUTING));
        assert_eq!(c.models.len(), demo_fleet().len());
        assert_eq!(c.keys.len(), 3);
        assert!(!text.contains(&keys.keys[0].2), "secrets never written");
        assert!(c.tls.is_none());
    }

    #[test]
    fn the_demo_pki_makes_a_valid_tls_config() {
        let dir = std::env::temp_dir().join(format!("sovereign-demo-tls-{}", std::process::id()));
        let keys = DemoKeys::generate();
        let tls = DemoTls::generate(&dir).unwrap();
        let text = demo_config(
            "127.0.0.1:0".parse().unwrap(),
            "http://127.0.0.1:9",
            &keys,
            &dir,
            Some(&tls),
        );
        let path = write_files(&dir, &text).unwrap();
        let c = Config::load(&path).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let t = c.tls.as_ref().unwrap();
        assert_eq!(t.spec.client_auth, crate::tls::ClientAuth::Optional);
        assert_eq!(c.cert_identities.len(), DEMO_CLIENTS.len());
        for f in [
            "ca.pem",
            "server.pem",
            "server.key",
            "crl.pem",
            "client-admin.pem",
            "client-member.key",
            "client-auditor.pem",
            "client-revoked.pem",
            "client-expired.key",
        ] {
            assert!(dir.join("tls").join(f).is_file(), "{f}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
