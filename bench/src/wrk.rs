//! wrk as the outside load generator: how it is started with one of the scripts of `bench/wrk`,
//! and what those scripts print for the benchmark to read (a line of figures as JSON, a line
//! of answers a tenth of a second by the wall clock).

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use uuid::Uuid;

/// What `register.lua` prints when one of its threads has had all its answers.
pub const REGISTER_THREAD_DONE: &str = "register-thread-done ";
/// The prefix of `register.lua`'s figures.
pub const REGISTER_RESULT: &str = "register-result ";
/// The prefix of `register.lua`'s answers a tenth of a second.
pub const REGISTER_TIMELINE: &str = "register-timeline ";

/// How one wrk is run.
#[derive(Clone, Debug)]
pub struct Wrk {
    /// The program (WRK, or `wrk` on the path).
    pub program: String,
    pub script: PathBuf,
    pub threads: usize,
    pub connections: usize,
    /// Seconds wrk runs at most.
    pub duration: usize,
    /// Seconds after which an answer counts as a timeout (and is left out of the percentiles).
    pub timeout: usize,
}

impl Wrk {
    /// wrk with the script `bench/wrk/<name>` (or WRK_SCRIPT, when `overridable`).
    pub fn with_script(name: &str, overridable: bool) -> Wrk {
        let script = std::env::var("WRK_SCRIPT")
            .ok()
            .filter(|_| overridable)
            .map_or_else(
                || Path::new(env!("CARGO_MANIFEST_DIR")).join("wrk").join(name),
                PathBuf::from,
            );
        Wrk {
            program: std::env::var("WRK").unwrap_or_else(|_| "wrk".into()),
            script,
            threads: 2,
            connections: 256,
            duration: 30,
            timeout: 10,
        }
    }

    /// Starts wrk against `url` with the script reading `file`; its output is piped.
    pub fn spawn(&self, url: &str, file: &Path) -> anyhow::Result<Child> {
        Command::new(&self.program)
            .arg(format!("-t{}", self.threads))
            .arg(format!("-c{}", self.connections))
            .arg(format!("-d{}s", self.duration))
            .arg(format!("--timeout={}s", self.timeout))
            .arg("--latency")
            .arg("-s")
            .arg(&self.script)
            .arg(url)
            .arg("--")
            .arg(file)
            .arg(self.threads.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("start {} (set WRK)", self.program))
    }
}

/// The JSON a script printed after `prefix`, if it printed such a line.
pub fn printed(report: &str, prefix: &str) -> anyhow::Result<Option<serde_json::Value>> {
    report
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(|json| serde_json::from_str(json).with_context(|| format!("the `{prefix}` line")))
        .transpose()
}

/// A script's answers a tenth of a second: the first tenth's Unix time, and the counts.
pub fn tenths(timeline: Option<&serde_json::Value>) -> (f64, Vec<u64>) {
    match timeline {
        Some(line) => (
            line["fromS"].as_f64().unwrap_or(0.0),
            line["tenthsS"]
                .as_array()
                .map(|a| a.iter().filter_map(|n| n.as_u64()).collect())
                .unwrap_or_default(),
        ),
        None => (0.0, Vec::new()),
    }
}

/// The registration ids `register.lua` wrote for its 201 answers, over its `threads`.
pub fn answered_ids(file: &Path, threads: usize) -> anyhow::Result<Vec<Uuid>> {
    let mut ids = Vec::new();
    for thread in 0..threads {
        let path = PathBuf::from(format!("{}.ids.{thread}", file.display()));
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        // A line that is no id matches no row: the audit counts its 201 as lost.
        ids.extend(text.lines().filter_map(|l| l.trim().parse::<Uuid>().ok()));
    }
    Ok(ids)
}
