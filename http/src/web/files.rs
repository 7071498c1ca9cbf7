//! The front's files as they are sent: each with its content type, a validator (ETag) and, for
//! text worth compressing, a gzip copy, all made once per process. The app's files are also
//! served below a version made of all of them (`/app/{version}/main.js`): the shell refers to
//! that address, the modules import each other by relative paths, so a browser keeps every
//! file of one release for a year and asks for nothing again until a release changes one.

use bytes::Bytes;
use include_dir::{Dir, include_dir};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::sync::OnceLock;

static WEB: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../web");

/// Smaller files gain less from gzip than its header and a request's decoding cost.
const COMPRESS_FROM: usize = 512;

/// One file ready to send.
pub struct Prepared {
    pub content_type: &'static str,
    /// Shared by every answer: sending it copies nothing.
    pub body: Bytes,
    pub gzip: Option<Bytes>,
    /// Quoted, as the header carries it; the gzip copy's ends in `-gz` (another body).
    pub etag: String,
    pub gzip_etag: String,
}

/// Every file the front serves, by its path below `web/`.
pub struct Bundle {
    /// Twelve hex digits naming this release's app files.
    pub version: String,
    files: HashMap<String, Prepared>,
}

impl Bundle {
    pub fn get(&self, path: &str) -> Option<&Prepared> {
        self.files.get(path)
    }
}

/// Whether `path` (below `web/`) is served: the shell, the app's files, the favicon and
/// robots.txt; the notes and tests of `web/` are not.
fn is_served(path: &str) -> bool {
    path.starts_with("app/") || ["index.html", "favicon.ico", "robots.txt"].contains(&path)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn compressible(content_type: &str) -> bool {
    content_type.starts_with("text/")
        || content_type.ends_with("json")
        || content_type.ends_with("+xml")
}

fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(body).ok()?;
    encoder.finish().ok()
}

/// `body` ready to send as the file at `path` (type, tags, a gzip copy when worth it).
pub(super) fn prepare(path: &str, body: Vec<u8>) -> Prepared {
    let content_type = content_type(path);
    let hash = &digest(&body)[..16];
    let gzip = (compressible(content_type) && body.len() >= COMPRESS_FROM)
        .then(|| gzip(&body))
        .flatten()
        .filter(|small| small.len() < body.len());
    Prepared {
        content_type,
        etag: format!("\"{hash}\""),
        gzip_etag: format!("\"{hash}-gz\""),
        gzip: gzip.map(Bytes::from),
        body: Bytes::from(body),
    }
}

fn walk<'a>(dir: &'a Dir<'a>, out: &mut Vec<&'a include_dir::File<'a>>) {
    out.extend(dir.files());
    for sub in dir.dirs() {
        walk(sub, out);
    }
}

fn build() -> Bundle {
    let mut all = Vec::new();
    walk(&WEB, &mut all);
    let mut served: Vec<_> = all
        .into_iter()
        .filter_map(|f| {
            let path = f.path().to_str()?.replace('\\', "/");
            is_served(&path).then_some((path, f.contents()))
        })
        .collect();
    served.sort_by(|a, b| a.0.cmp(&b.0));
    let mut release = Sha256::new();
    for (path, contents) in served.iter().filter(|(p, _)| p.starts_with("app/")) {
        release.update(path.as_bytes());
        release.update([0]);
        release.update(contents);
    }
    let version: String = release
        .finalize()
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect();
    let files = served
        .into_iter()
        .map(|(path, contents)| {
            let body = if path == "index.html" {
                // The shell names this release's files, which may then be kept for a year.
                String::from_utf8_lossy(contents)
                    .replace("\"/app/", &format!("\"/app/{version}/"))
                    .into_bytes()
            } else {
                contents.to_vec()
            };
            let prepared = prepare(&path, body);
            (path, prepared)
        })
        .collect();
    Bundle { version, files }
}

/// The front's files, prepared on first use.
pub fn bundle() -> &'static Bundle {
    static BUNDLE: OnceLock<Bundle> = OnceLock::new();
    BUNDLE.get_or_init(build)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_names_this_releases_files_and_text_is_compressed() {
        let b = bundle();
        assert_eq!(b.version.len(), 12);
        let index = String::from_utf8(b.get("index.html").unwrap().body.to_vec()).unwrap();
        assert!(
            index.contains(&format!("\"/app/{}/main.js\"", b.version)),
            "{index}"
        );
        assert!(!index.contains("\"/app/main.js\""));
        let main = b.get("app/main.js").unwrap();
        assert_eq!(main.content_type, "text/javascript; charset=utf-8");
        let zipped = main.gzip.as_ref().expect("a module is compressed");
        assert!(zipped.len() < main.body.len() / 2);
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&zipped[..]), &mut back)
            .unwrap();
        assert_eq!(back, main.body);
        assert_ne!(main.etag, main.gzip_etag);
        assert!(b.get("favicon.ico").is_some_and(|f| f.gzip.is_none()));
        assert!(b.get("robots.txt").is_some());
        assert!(b.get("README.md").is_none() && b.get("tests/qr.test.mjs").is_none());
    }
}
