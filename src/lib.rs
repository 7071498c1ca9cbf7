//! The `bilet` node: what `bilet serve` starts, also used by the black-box tests to run a
//! node inside the test process.

pub mod cluster_status;
pub mod consumers;
pub mod jobs;
pub mod logging;
pub mod node;
pub mod refunds;
pub mod settings;
