//! The plan a team is on ([`Plan`]); its numeric defaults (rpm, tokens per day) are config
//! (`crate::config::Plans`), the plan itself is kept by the store and read by admission.

/// A team's plan; its numeric defaults (rpm, tokens per day) live in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Plan {
    #[default]
    Development,
    Professional,
    Enterprise,
}

impl Plan {
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Development => "development",
            Plan::Professional => "professional",
            Plan::Enterprise => "enterprise",
        }
    }

    pub fn parse(s: &str) -> Option<Plan> {
        match s {
            "development" => Some(Plan::Development),
            "professional" => Some(Plan::Professional),
            "enterprise" => Some(Plan::Enterprise),
            _ => None,
        }
    }
}
