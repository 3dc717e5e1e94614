//! Arbitrary input never makes the loader panic (property test; proptest
//! fails a case that panics), and what it reports about such input holds
//! together: the same input gives the same diagnostics, every line named
//! is a line of the file, and `-t`'s verdict is clean exactly when nothing
//! was reported. The preprocessor terminates on self-referencing definitions.

use keepalived::config::diag::ErrClass;
use keepalived::config::reader::MemLoader;
use keepalived::config::validate::Host;
use keepalived::config::{load_with, LoadOptions};
use proptest::prelude::*;
use std::path::PathBuf;

struct NoIfs;
impl Host for NoIfs {
    fn interface_exists(&self, _: &str) -> bool {
        false
    }
}

fn load_bytes(data: Vec<u8>) -> keepalived::config::Loaded {
    let mut l = MemLoader {
        cwd: PathBuf::from("/cfg"),
        ..MemLoader::default()
    };
    l.files.insert(PathBuf::from("/cfg/k.conf"), data);
    let opts = LoadOptions {
        config_id: "host".into(),
        all_config: false,
        config_test: true,
    };
    load_with(&l, &NoIfs, &PathBuf::from("/cfg/k.conf"), &opts)
}

/// The properties every load must have (see the module's comment).
fn coherent(data: &[u8]) -> Result<(), TestCaseError> {
    let a = load_bytes(data.to_vec());
    let b = load_bytes(data.to_vec());
    prop_assert_eq!(
        a.diagnostics.items(),
        b.diagnostics.items(),
        "not deterministic"
    );
    let lines = data.split(|&c| c == b'\n').count();
    for d in a.diagnostics.items() {
        if &*d.file == "/cfg/k.conf" {
            prop_assert!(d.line <= lines, "line {} of {lines}: {d}", d.line);
        }
    }
    let reported = a.diagnostics.items().iter().any(|d| d.class > ErrClass::Ok)
        || a.diagnostics.missing_parameter
        || a.diagnostics.fatal_include;
    let code = a.config_test_exit_code();
    prop_assert_eq!(
        code == 0,
        !reported,
        "exit {} with {:?}",
        code,
        a.diagnostics.items()
    );
    Ok(())
}

const ALPHABET: &[&str] = &[
    "{",
    "}",
    "\"",
    "#",
    "!",
    "\\",
    "$",
    "${",
    "@",
    "~SEQ(",
    "~LST(",
    ")",
    ",",
    "\n",
    " ",
    "virtual_server",
    "real_server",
    "10.0.0.1",
    "80",
    "TCP_CHECK",
    "HTTP_GET",
    "url",
    "include",
    "$A=",
    "$B=\\",
    "~SEQx(i,1,3)",
    "global_defs",
    "vrrp_instance",
    "@host",
    "@^host",
    "virtual_server_group",
    "1.2.3.4-9",
    "fwmark",
    "\r",
    "\0",
    "x",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        coherent(&data)?;
    }

    #[test]
    fn token_soup_never_panics(parts in proptest::collection::vec(0..ALPHABET.len(), 0..300)) {
        let s: String = parts.iter().map(|&i| ALPHABET[i]).collect();
        coherent(s.as_bytes())?;
    }
}

#[test]
fn recursive_definition_terminates() {
    let code =
        load_bytes(b"$A=$A $A\nglobal_defs {\n router_id $A\n}\n".to_vec()).config_test_exit_code();
    assert_eq!(code, 5);
}
