//! The one active policy of a world that has one at a time (the tool and retrieval policies),
//! hot-swappable: swapped whole (an `ArcSwap`), so a call runs on the version it loaded at its
//! start, in-flight calls finish on the old one while the new one takes over, and a version that
//! failed to load (compile, world check, smoke call) never replaces anything.

use std::sync::Arc;

use arc_swap::ArcSwap;

/// A loaded policy with the inputs it was loaded from (what a swap that changes only one of
/// them reuses, and what the admin API shows).
pub struct Installed<P> {
    pub policy: P,
    pub wasm: Arc<[u8]>,
    pub settings: Option<String>,
    /// The compiled-in default, not an upload.
    pub builtin: bool,
}

pub struct Slot<P> {
    active: ArcSwap<Installed<P>>,
}

impl<P> Slot<P> {
    pub fn new(first: Installed<P>) -> Slot<P> {
        Slot {
            active: ArcSwap::from_pointee(first),
        }
    }

    /// The active version. Holding it keeps that version callable after a swap.
    pub fn active(&self) -> Arc<Installed<P>> {
        self.active.load_full()
    }

    /// Makes `next` (already loaded and smoke-called) the active version.
    pub fn replace(&self, next: Installed<P>) -> Arc<Installed<P>> {
        let next = Arc::new(next);
        // Two swaps racing: the later store wins, each a whole, smoke-called version.
        self.active.store(next.clone());
        next
    }
}

/// Where an installed version is kept across restarts: `<dir>/<name>.wasm` and, when it has
/// settings, `<dir>/<name>.settings` (`<data_dir>/policies`). Written whole (a temporary file,
/// synced, then renamed), the settings first, so a crash between the two leaves the previous
/// component with the new settings at worst, which the next start smoke-calls like any upload.
#[derive(Debug, Clone)]
pub struct Kept {
    pub dir: std::path::PathBuf,
    pub name: &'static str,
}

impl Kept {
    /// The kept component and settings, if a version was installed here before.
    pub fn read(&self) -> std::io::Result<Option<(Vec<u8>, Option<String>)>> {
        let wasm = match std::fs::read(self.dir.join(format!("{}.wasm", self.name))) {
            Ok(w) => w,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let settings =
            match std::fs::read_to_string(self.dir.join(format!("{}.settings", self.name))) {
                Ok(s) => Some(s),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e),
            };
        Ok(Some((wasm, settings)))
    }

    /// Keeps `wasm` and `settings` as the installed version.
    pub fn write(&self, wasm: &[u8], settings: Option<&str>) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let write = |file: String, bytes: &[u8]| -> std::io::Result<()> {
            let tmp = self.dir.join(format!("{file}.tmp"));
            std::fs::write(&tmp, bytes)?;
            std::fs::File::open(&tmp)?.sync_all()?;
            std::fs::rename(&tmp, self.dir.join(file))
        };
        match settings {
            Some(s) => write(format!("{}.settings", self.name), s.as_bytes())?,
            None => match std::fs::remove_file(self.dir.join(format!("{}.settings", self.name))) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            },
        }
        write(format!("{}.wasm", self.name), wasm)
    }
}

impl Kept {
    /// [`Kept::read`] off the runtime.
    pub async fn read_async(
        &self,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, super::PolicyError> {
        let kept = self.clone();
        tokio::task::spawn_blocking(move || kept.read())
            .await
            .map_err(|e| super::PolicyError::Cancelled(e.to_string()))?
            .map_err(|e| {
                super::PolicyError::Engine(format!(
                    "reading the kept {} policy in {}: {e}",
                    self.name,
                    self.dir.display()
                ))
            })
    }

    /// [`Kept::write`] off the runtime; a failure is logged (the version is active, only the
    /// next restart would miss it).
    pub async fn write_async(&self, wasm: Arc<[u8]>, settings: Option<String>) {
        let kept = self.clone();
        let written =
            tokio::task::spawn_blocking(move || kept.write(&wasm, settings.as_deref())).await;
        if !matches!(written, Ok(Ok(()))) {
            tracing::error!(policy = self.name, dir = %self.dir.display(), "the installed policy is active but could not be kept for the next start; install it again after a restart");
        }
    }
}
