//! Fuzzes the whole loader (preprocessor, parser, validation) on one
//! in-memory file: `cargo +nightly fuzz run load`.
#![no_main]

use keepalived::config::reader::MemLoader;
use keepalived::config::validate::Host;
use keepalived::config::{load_with, LoadOptions};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;

struct NoIfs;
impl Host for NoIfs {
    fn interface_exists(&self, _: &str) -> bool {
        false
    }
}

fuzz_target!(|data: &[u8]| {
    let mut l = MemLoader {
        cwd: PathBuf::from("/cfg"),
        ..MemLoader::default()
    };
    l.files.insert(PathBuf::from("/cfg/k.conf"), data.to_vec());
    let opts = LoadOptions {
        config_id: "fuzz".into(),
        all_config: false,
        config_test: true,
    };
    let _ = load_with(&l, &NoIfs, &PathBuf::from("/cfg/k.conf"), &opts);
});
