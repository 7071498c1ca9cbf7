//! Loading the configuration: cluster.toml plus the environment, then the secrets. Development
//! mode generates a missing JWT or service secret once, when `bilet serve` starts, and keeps it
//! in the data directory; production mode refuses to start without what keeps it safe
//! (`Config::check_production`). `bilet config` reads without generating anything.

use anyhow::{Context, bail};
use base64::Engine;
use domain::config::{Config, Mode, Secret, SecretSetting};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const JWT_SECRET_FILE: &str = "jwt_secret";
const SERVICE_SECRET_FILE: &str = "service_secret";

/// How a deployment says it is one.
const CHOOSE_PRODUCTION: &str =
    "set BILET_MODE=production (or mode = \"production\" in cluster.toml)";

/// Reads `path` (absent is fine when it is the default name) and the process environment: the
/// configuration as given, nothing generated and nothing refused beyond its form.
pub fn read(path: &Path) -> anyhow::Result<Config> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && path == Path::new("cluster.toml") => {
            None
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    Ok(Config::load(text.as_deref(), std::env::vars())?)
}

/// The configuration of a command that uses it (migrations, administrators, the dead-letter
/// tool): `read`, then production's refusals. Nothing is written.
pub fn load(path: &Path) -> anyhow::Result<Config> {
    let config = read(path)?;
    config.check_production()?;
    Ok(config)
}

/// The configuration `bilet serve` runs with: `load`, plus the secrets development generates
/// (and production's own service secret when every service is in this process).
pub fn load_for_serve(path: &Path) -> anyhow::Result<Config> {
    let mut config = load(path)?;
    ensure_jwt_secret(&mut config)?;
    ensure_service_secret(&mut config)?;
    Ok(config)
}

/// What `bilet serve` warns about as it starts, each with the setting it names: a mode left
/// to default, and every feature off for want of a secret.
pub fn startup_warnings(config: &Config) -> Vec<(&'static str, String)> {
    let mut warnings = Vec::new();
    if !config.notes.mode_given {
        warnings.push((
            "BILET_MODE",
            format!(
                "no mode given (neither BILET_MODE nor `mode` in cluster.toml): running in development mode, with secrets generated into {} and none of production's checks; for a deployment {CHOOSE_PRODUCTION}",
                config.data_dir.display()
            ),
        ));
    }
    for (setting, line) in config.missing_secrets() {
        warnings.push((setting.variable(), line));
    }
    warnings
}

/// Logs `startup_warnings`.
pub fn warn_at_startup(config: &Config) {
    for (setting, message) in startup_warnings(config) {
        tracing::warn!(setting, "{message}");
    }
}

/// What `bilet config` prints: the state of every secret and what production would refuse, as
/// comments, then the effective configuration with secrets masked. It works before any secret
/// exists and writes nothing.
pub fn describe(config: &Config) -> String {
    let mut out = String::new();
    let mode = match config.mode {
        Mode::Development => "development",
        Mode::Production => "production",
    };
    let _ = writeln!(out, "# mode: {mode}");
    if !config.notes.mode_given {
        let _ = writeln!(
            out,
            "#   not given, so development's defaults and generated secrets; for a deployment {CHOOSE_PRODUCTION}"
        );
    }
    let _ = writeln!(out, "# secrets:");
    let missing = config.missing_secrets();
    for setting in SecretSetting::ALL {
        let state = match missing.iter().find(|(s, _)| *s == setting) {
            Some(_) if config.mode == Mode::Development && generated_file(setting).is_some() => {
                development_secret(config, setting)
            }
            Some((_, line)) => format!("MISSING: {line}"),
            None if config.secret(setting).is_some() => {
                format!("{} ({}): set", setting.variable(), setting.path())
            }
            // Not given and not needed (the object store's keys without an endpoint).
            None => continue,
        };
        let _ = writeln!(out, "#   {state}");
    }
    let refusals = config.production_refusals();
    if !refusals.is_empty() {
        let _ = writeln!(out, "# production refuses to start:");
        for refusal in &refusals {
            let _ = writeln!(out, "#   - {refusal}");
        }
    }
    out.push_str(&config.to_masked_toml());
    out
}

/// `bilet config --check`: every refusal, or a summary and the warnings. Writes nothing.
pub fn check(config: &Config) -> anyhow::Result<String> {
    config.check_production()?;
    let node = config.current_node()?;
    let services: Vec<&str> = node.services.iter().map(|s| s.name()).collect();
    let mut out = format!(
        "configuration accepted: {} mode, node `{}` runs {}\n",
        match config.mode {
            Mode::Development => "development",
            Mode::Production => "production",
        },
        node.name,
        services.join(", ")
    );
    for (_, warning) in startup_warnings(config) {
        let _ = writeln!(out, "warning: {warning}");
    }
    Ok(out)
}

/// The file development keeps a generated secret in, for the two it generates.
fn generated_file(setting: SecretSetting) -> Option<&'static str> {
    match setting {
        SecretSetting::Jwt => Some(JWT_SECRET_FILE),
        SecretSetting::Service => Some(SERVICE_SECRET_FILE),
        _ => None,
    }
}

/// The state of a secret development generates, read without generating it.
fn development_secret(config: &Config, setting: SecretSetting) -> String {
    let file: PathBuf = config
        .data_dir
        .join(generated_file(setting).unwrap_or_default());
    let kept = std::fs::read_to_string(&file).is_ok_and(|s| !s.trim().is_empty());
    format!(
        "{} ({}) {}: {}",
        setting.variable(),
        setting.path(),
        config.secret_absence(setting),
        if kept {
            format!(
                "`bilet serve` uses the one generated earlier in {}",
                file.display()
            )
        } else {
            format!("`bilet serve` generates one into {}", file.display())
        }
    )
}

/// The secret that signs requests between processes. Production without one (every service on
/// loopback, as `check_production` made sure) gets a random one of its own: no other process
/// could be reached anyway. Development keeps a generated one in the data directory, so
/// processes started from the same directory trust each other.
fn ensure_service_secret(config: &mut Config) -> anyhow::Result<()> {
    if config.auth.service_secret.is_some() {
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
    if config.auth.jwt_secret.is_some() {
        return Ok(());
    }
    // `check_production` has refused this already; kept so no path serves production with a
    // generated signing secret.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn development(data_dir: &Path, env: &[(&str, &str)]) -> Config {
        let mut config = Config::load(None, env.iter().copied()).unwrap();
        config.data_dir = data_dir.to_path_buf();
        config
    }

    fn temp_dir() -> PathBuf {
        std::env::temp_dir().join(format!("bilet-settings-{}", uuid::Uuid::now_v7().simple()))
    }

    #[test]
    fn development_generates_each_secret_once_and_keeps_it_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir();
        let mut first = development(&dir, &[]);
        ensure_jwt_secret(&mut first).unwrap();
        ensure_service_secret(&mut first).unwrap();
        for (file, secret) in [
            (JWT_SECRET_FILE, &first.auth.jwt_secret),
            (SERVICE_SECRET_FILE, &first.auth.service_secret),
        ] {
            let path = dir.join(file);
            let kept = std::fs::read_to_string(&path).unwrap();
            assert!(kept.len() >= 32, "{file}");
            assert_eq!(secret.as_ref().unwrap().expose(), kept, "{file}");
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600,
                "{file}"
            );
        }
        let mut second = development(&dir, &[]);
        ensure_jwt_secret(&mut second).unwrap();
        ensure_service_secret(&mut second).unwrap();
        assert_eq!(second.auth.jwt_secret, first.auth.jwt_secret);
        assert_eq!(second.auth.service_secret, first.auth.service_secret);
        // An empty variable counts as absent: the kept secret is used, never "".
        let mut blank = development(&dir, &[("JWT_SECRET", ""), ("SERVICE_SECRET", " ")]);
        ensure_jwt_secret(&mut blank).unwrap();
        ensure_service_secret(&mut blank).unwrap();
        assert_eq!(blank.auth.jwt_secret, first.auth.jwt_secret);
        assert_eq!(blank.auth.service_secret, first.auth.service_secret);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn describing_and_checking_write_nothing_and_say_what_is_missing() {
        let dir = temp_dir();
        let config = development(&dir, &[("MESSENGER_BOT_TOKEN", "")]);
        let text = describe(&config);
        assert!(!dir.exists(), "describing created {}", dir.display());
        let jwt_file = dir.join(JWT_SECRET_FILE);
        assert!(
            text.contains(&format!(
                "#   JWT_SECRET (auth.jwt_secret) is not set: `bilet serve` generates one into {}",
                jwt_file.display()
            )),
            "{text}"
        );
        assert!(
            text.contains("#   MISSING: MESSENGER_BOT_TOKEN (messenger.bot_token) is set but empty: the messenger bot is off"),
            "{text}"
        );
        assert!(
            text.contains("#   not given, so development's defaults"),
            "{text}"
        );
        assert!(!text.contains("# production refuses"), "{text}");
        // What describes as TOML still parses once the comments are skipped.
        assert!(text.parse::<toml::Table>().is_ok(), "{text}");
        let checked = check(&config).unwrap();
        assert!(
            checked.starts_with("configuration accepted: development mode, node `default` runs gateway, identity, events, notifications, media, analytics\n"),
            "{checked}"
        );
        assert!(checked.contains("warning: no mode given"), "{checked}");
        assert!(
            checked.contains("warning: MESSENGER_BOT_TOKEN"),
            "{checked}"
        );
        assert!(!dir.exists());

        // Once serve generated them, describing says they are kept.
        let mut served = config.clone();
        ensure_jwt_secret(&mut served).unwrap();
        let text = describe(&config);
        assert!(
            text.contains(&format!(
                "uses the one generated earlier in {}",
                jwt_file.display()
            )),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn production_describes_missing_secrets_and_every_refusal_without_failing() {
        let config = Config::load(None, [("BILET_MODE", "production")]).unwrap();
        let text = describe(&config);
        assert!(
            text.starts_with("# mode: production\n# secrets:\n"),
            "{text}"
        );
        assert!(
            text.contains("#   MISSING: JWT_SECRET (auth.jwt_secret) is not set"),
            "{text}"
        );
        assert!(
            text.contains("# production refuses to start:\n#   - JWT_SECRET is not set"),
            "{text}"
        );
        assert!(
            text.contains("#   - DATABASE_APP_PASSWORD is not set"),
            "{text}"
        );
        assert!(
            text.contains("#   - http.public_url (PUBLIC_URL)"),
            "{text}"
        );
        let refused = check(&config).unwrap_err().to_string();
        for setting in ["JWT_SECRET", "DATABASE_APP_PASSWORD", "PUBLIC_URL"] {
            assert!(refused.contains(setting), "{refused}");
        }
    }
}
