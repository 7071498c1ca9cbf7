//! The web front's files are built into the crate (`web.rs`): a change under `web/` rebuilds it.
fn main() {
    println!("cargo:rerun-if-changed=../web");
}
