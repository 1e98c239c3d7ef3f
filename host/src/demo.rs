//! `sovereign demo`: the gateway on embedded defaults in front of the simulated fleet, in one
//! process, with freshly generated keys — a newcomer's first run. The configuration it builds is
//! an ordinary config file, written to the data directory so it can be read and reused.

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

/// A complete gateway config (TOML) in front of a simulated fleet at `fleet_url`.
pub fn demo_config(listen: SocketAddr, fleet_url: &str, keys: &DemoKeys) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Written by `sovereign demo`: the gateway in front of the simulated fleet.\n\
         sovereign_id = \"demo-riyadh-1\"\nregion = \"sa-riyadh-1\"\ndefault_model = \"jais-30b-chat\"\n\n\
         [server]\nlisten = \"{listen}\"\n"
    );
    for m in demo_fleet() {
        write_model(&mut t, &m, fleet_url);
    }
    let _ = writeln!(t, "[[teams]]\nid = \"demo\"\nname = \"Demo team\"\n");
    for (name, role, secret) in &keys.keys {
        let _ = writeln!(
            t,
            "[[keys]]\nname = \"{name}\"\nteam = \"demo\"\nrole = \"{role}\"\nhash = \"{}\"\n",
            auth::hash_for_config(secret)
        );
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

pub fn write_config(data_dir: &Path, text: &str) -> anyhow::Result<std::path::PathBuf> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating data directory {}", data_dir.display()))?;
    let path = data_dir.join("demo-config.toml");
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn the_demo_config_is_a_valid_config_accepting_its_keys() {
        let keys = DemoKeys::generate();
        let text = demo_config("127.0.0.1:0".parse().unwrap(), "http://127.0.0.1:9", &keys);
        let c = Config::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(c.models.len(), demo_fleet().len());
        assert_eq!(c.keys.len(), 3);
        assert!(!text.contains(&keys.keys[0].2), "secrets never written");
    }
}
