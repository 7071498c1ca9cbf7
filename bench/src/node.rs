//! One `bilet serve` running the whole platform (every service, the in-process broker) as the
//! outside benchmarks run it: fixed secrets, the gateway's rate limits out of the way, a pool of
//! 48 connections, log filter `error`.

use crate::sale::{SECRET, SERVICE_SECRET, free_port, ready, serve};
use domain::config::Service;
use std::path::{Path, PathBuf};
use std::process::Child;
use uuid::Uuid;

/// The one node of the cluster.toml, running every service.
const NODE: &str = "all";

/// One `bilet serve` running every service, its cluster.toml and data in a directory of its
/// own; killed, and the directory removed, when dropped.
pub struct Node {
    /// The process.
    pub child: Child,
    /// The gateway's base URL.
    pub gateway: String,
    file: PathBuf,
    /// Its directory, removed when dropped: a benchmark may keep its own files there.
    pub dir: PathBuf,
}

impl Node {
    /// Starts it on the database at `db_url`, in a directory named for `bench`.
    pub fn start(bin: &Path, db_url: &str, bench: &str) -> anyhow::Result<Node> {
        let dir =
            std::env::temp_dir().join(format!("bilet-bench-{bench}-{}", Uuid::now_v7().simple()));
        std::fs::create_dir_all(dir.join("data"))?;
        let mut addresses = String::new();
        let mut gateway = String::new();
        for service in Service::ALL {
            let port = free_port();
            let url = format!("http://127.0.0.1:{port}");
            addresses.push_str(&format!(
                "[services.{}]\nlisten = \"127.0.0.1:{port}\"\nurl = \"{url}\"\n",
                service.name()
            ));
            if service == Service::Gateway {
                gateway = url;
            }
        }
        let services = Service::ALL
            .iter()
            .map(|s| format!("\"{}\"", s.name()))
            .collect::<Vec<_>>()
            .join(", ");
        let file = dir.join("cluster.toml");
        std::fs::write(
            &file,
            format!(
                r#"
data_dir = "{data}"
node = "{NODE}"
[log]
filter = "error"
[database]
url = "{db_url}"
pool_size = 48
[broker]
url = "memory"
[auth]
jwt_secret = "{SECRET}"
service_secret = "{SERVICE_SECRET}"
[gateway]
user_per_minute = 4000000000
public_per_minute = 4000000000
{addresses}
[[nodes]]
name = "{NODE}"
services = [{services}]
"#,
                data = dir.join("data").display(),
            ),
        )?;
        let child = serve(bin, &file, NODE)?;
        Ok(Node {
            child,
            gateway,
            file,
            dir,
        })
    }

    /// Waits for the gateway's readiness; if the process died meanwhile, says so.
    pub async fn ready(&mut self, client: &reqwest::Client) -> anyhow::Result<()> {
        let ready = ready(client, &self.gateway).await;
        if let Ok(Some(status)) = self.child.try_wait() {
            anyhow::bail!(
                "`bilet serve` exited ({status}); run `{} --config {} serve` to see why",
                std::env::var("BILET_BIN").unwrap_or_else(|_| "bilet".into()),
                self.file.display()
            );
        }
        ready
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
