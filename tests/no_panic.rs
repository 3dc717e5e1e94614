//! Arbitrary input never makes the loader panic (property test), and the
//! preprocessor terminates on self-referencing definitions.

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

fn load_bytes(data: Vec<u8>) -> i32 {
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
    load_with(&l, &NoIfs, &PathBuf::from("/cfg/k.conf"), &opts).config_test_exit_code()
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
        let code = load_bytes(data);
        prop_assert!([0, 2, 4, 5, 6].contains(&code));
    }

    #[test]
    fn token_soup_never_panics(parts in proptest::collection::vec(0..ALPHABET.len(), 0..300)) {
        let s: String = parts.iter().map(|&i| ALPHABET[i]).collect();
        let code = load_bytes(s.into_bytes());
        prop_assert!([0, 2, 4, 5, 6].contains(&code));
    }
}

#[test]
fn recursive_definition_terminates() {
    let code = load_bytes(b"$A=$A $A\nglobal_defs {\n router_id $A\n}\n".to_vec());
    assert_eq!(code, 5);
}
