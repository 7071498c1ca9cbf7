//! Loading the configuration: cluster.toml plus the environment, then the JWT secret, which
//! development mode generates once and keeps in the data directory.

use anyhow::{Context, bail};
use base64::Engine;
use domain::config::{Config, Mode, Secret};
use std::path::Path;

const SECRET_FILE: &str = "jwt_secret";

/// Reads `path` (absent is fine when it is the default name) and the process environment.
pub fn load(path: &Path) -> anyhow::Result<Config> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && path == Path::new("cluster.toml") => {
            None
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut config = Config::load(text.as_deref(), std::env::vars())?;
    ensure_jwt_secret(&mut config)?;
    Ok(config)
}

fn ensure_jwt_secret(config: &mut Config) -> anyhow::Result<()> {
    if config
        .auth
        .jwt_secret
        .as_ref()
        .is_some_and(|s| !s.expose().is_empty())
    {
        return Ok(());
    }
    if config.mode == Mode::Production {
        bail!(
            "JWT_SECRET is not set: production mode needs an explicit signing secret (set JWT_SECRET or [auth] jwt_secret)"
        );
    }
    let file = config.data_dir.join(SECRET_FILE);
    if let Ok(existing) = std::fs::read_to_string(&file) {
        let existing = existing.trim();
        if !existing.is_empty() {
            config.auth.jwt_secret = Some(Secret::new(existing));
            return Ok(());
        }
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create data directory {}", config.data_dir.display()))?;
    let bytes: [u8; 48] = rand::random();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    write_private(&file, &secret)?;
    eprintln!(
        "warning: no JWT_SECRET given; generated one and kept it in {} (development mode only)",
        file.display()
    );
    config.auth.jwt_secret = Some(Secret::new(secret));
    Ok(())
}

fn write_private(path: &Path, content: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(content.as_bytes())?;
    Ok(())
}
