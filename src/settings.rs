//! Loading the configuration: cluster.toml plus the environment, then the secrets. Development
//! mode generates a missing JWT or service secret once and keeps it in the data directory;
//! production mode refuses to start without what keeps it safe (`Config::check_production`).

use anyhow::{Context, bail};
use base64::Engine;
use domain::config::{Config, Mode, Secret};
use std::path::Path;

const JWT_SECRET_FILE: &str = "jwt_secret";
const SERVICE_SECRET_FILE: &str = "service_secret";

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
    config.check_production()?;
    ensure_service_secret(&mut config)?;
    Ok(config)
}

/// The secret that signs requests between processes. Production without one (every service on
/// loopback, as `check_production` made sure) gets a random one of its own: no other process
/// could be reached anyway. Development keeps a generated one in the data directory, so
/// processes started from the same directory trust each other.
fn ensure_service_secret(config: &mut Config) -> anyhow::Result<()> {
    if config
        .auth
        .service_secret
        .as_ref()
        .is_some_and(|s| !s.expose().is_empty())
    {
        return Ok(());
    }
    let secret = if config.mode == Mode::Production {
        random_secret()
    } else {
        read_or_generate(config, SERVICE_SECRET_FILE, "SERVICE_SECRET")?
    };
    config.auth.service_secret = Some(Secret::new(secret));
    Ok(())
}

fn random_secret() -> String {
    let bytes: [u8; 48] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The secret kept in `data_dir/<file>`, generated (0600) when there is none yet.
fn read_or_generate(config: &Config, file: &str, variable: &str) -> anyhow::Result<String> {
    let file = config.data_dir.join(file);
    if let Ok(existing) = std::fs::read_to_string(&file) {
        let existing = existing.trim();
        if !existing.is_empty() {
            return Ok(existing.to_string());
        }
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create data directory {}", config.data_dir.display()))?;
    let secret = write_private(&file, &random_secret())?;
    eprintln!(
        "warning: no {variable} given; generated one and kept it in {} (development mode only)",
        file.display()
    );
    Ok(secret)
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
    let secret = read_or_generate(config, JWT_SECRET_FILE, "JWT_SECRET")?;
    config.auth.jwt_secret = Some(Secret::new(secret));
    Ok(())
}

/// Writes `content` to `path` (0600) unless it exists; answers what `path` holds afterwards.
/// The file appears whole or not at all (a hard link of a finished temporary file), so
/// processes started together from one data directory end up with the same secret.
fn write_private(path: &Path, content: &str) -> anyhow::Result<String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let temp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .with_context(|| format!("cannot write {}", temp.display()))?;
    file.write_all(content.as_bytes())?;
    file.sync_all()?;
    let linked = std::fs::hard_link(&temp, path);
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(content.to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(std::fs::read_to_string(path)?.trim().to_string())
        }
        Err(e) => Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
}
