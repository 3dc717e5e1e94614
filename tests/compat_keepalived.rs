//! Side by side with the real keepalived 2.2.7 (`/usr/sbin/keepalived`, from
//! Debian's package; `.ci/run` installs it): every shared sample config and
//! thousands of generated configs must get the same `-t` exit code, and the
//! same set of lines with problems.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const KEEPALIVED: &str = "/usr/sbin/keepalived";

fn require_keepalived() {
    assert!(
        Path::new(KEEPALIVED).exists(),
        "keepalived 2.2.7 is required for the side-by-side tests: apt-get install keepalived (.ci/run does this)"
    );
}

fn run(bin: &str, dir: &Path, file: &str) -> (i32, String) {
    let out = Command::new(bin)
        .current_dir(dir)
        .args(["-t", "-f", file, "-i", "gen"])
        .output()
        .expect("run keepalived");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn ours() -> &'static str {
    env!("CARGO_BIN_EXE_keepalived")
}

#[test]
#[cfg_attr(
    not(feature = "reference"),
    ignore = "needs keepalived 2.2.7 installed: cargo test --features reference"
)]
fn samples_match_keepalived_exit_codes() {
    require_keepalived();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/keepalived-samples");
    let mut n = 0;
    let mut diffs = Vec::new();
    for e in std::fs::read_dir(&dir).expect("../shared/keepalived-samples") {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        if !name.starts_with("keepalived.conf") {
            continue;
        }
        n += 1;
        let (ka, _) = run(KEEPALIVED, &dir, &name);
        let (us, out) = run(ours(), &dir, &name);
        if ka != us {
            diffs.push(format!("{name}: keepalived {ka}, ours {us}\n{out}"));
        }
    }
    assert!(n >= 20, "only {n} samples");
    println!("{n} samples compared");
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// keepalived's `(file: Line N) msg` / `(Line N) msg` lines.
fn ka_lines(stderr: &str) -> BTreeSet<usize> {
    stderr
        .lines()
        .filter_map(|l| {
            let i = l.find("Line ")?;
            let rest = &l[i + 5..];
            let end = rest.find(')')?;
            rest[..end].parse().ok()
        })
        .collect()
}

/// [`ka_lines`] with keepalived's first parse (its `(Line N)` lines, with
/// no file name) put back on real lines: that parse does not count a line
/// holding a NUL byte, so from one on its numbers are one short
/// (docs/compat.md). Where two real lines give the same number (the NUL
/// line and the one before it), the one `ours` names is taken.
fn ka_lines_real(
    stderr: &str,
    conf: &str,
    ours: &BTreeSet<usize>,
    our_err: &str,
) -> BTreeSet<usize> {
    let nul_lines: Vec<usize> = conf
        .split('\n')
        .enumerate()
        .filter(|(_, l)| l.contains('\0'))
        .map(|(i, _)| i + 1)
        .collect();
    let first_parse = |l: usize| l - nul_lines.iter().filter(|&&z| z <= l).count();
    let real = |n: usize| {
        let candidates: Vec<usize> = (n..=n + nul_lines.len())
            .filter(|&l| first_parse(l) == n)
            .collect();
        candidates
            .iter()
            .copied()
            .find(|l| ours.contains(l))
            .or(candidates.first().copied())
            .unwrap_or(n)
    };
    stderr
        .lines()
        .flat_map(|l| {
            let unnamed = l.starts_with("(Line ");
            let mut at: Vec<usize> = ka_lines(l)
                .into_iter()
                .map(|n| if unnamed { real(n) } else { n })
                .collect();
            // Line 0 (a NUL on the first line) is printed with no
            // position: the message ours gives at line 1.
            if !l.contains("Line ")
                && first_parse(1) == 0
                && our_err
                    .lines()
                    .any(|u| u.contains(":1: ") && u.contains(l.trim()))
            {
                at.push(1);
            }
            at
        })
        .collect()
}

/// Our `file:LINE: severity: msg` lines.
fn our_lines(stderr: &str) -> BTreeSet<usize> {
    stderr
        .lines()
        .filter(|l| !l.starts_with(' '))
        // An extra note of ours (keepalived is silent): docs/compat.md.
        .filter(|l| !l.contains("note: No config files matched"))
        // Validation findings keepalived reports without a line; we add one.
        .filter(|l| {
            !l.contains("has no real servers") && !l.contains("specified but not configured")
        })
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let _file = it.next()?;
            it.next()?.parse().ok()
        })
        .collect()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len())]
    }
    fn chance(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }
}

/// A `virtual_routes` / `static_routes` line: a destination and options,
/// good and bad, in ip(8)'s words.
fn gen_route(r: &mut Rng) -> String {
    let mut w = vec![r
        .pick(&[
            "198.51.100.0/24",
            "198.51.100.0/24",
            "default",
            "2001:db8:1::/48",
            "198.51.100.0/33",
            "x",
            "blackhole 203.0.113.0/24",
            "to 198.51.100.0/24",
            "unreachable 2001:db8:2::/48",
            "10 198.51.100.0/24",
        ])
        .to_string()];
    for _ in 0..r.below(4) {
        w.push(
            r.pick(&[
                "via 192.0.2.1",
                "via 2001:db8::1",
                "gw 192.0.2.1",
                "via inet6 2001:db8::1",
                "via x",
                "src 192.0.2.100",
                "src x",
                "dev {IF}",
                "dev {IF}",
                "dev nosuch9",
                "metric 5",
                "metric x",
                "table 100",
                "table main",
                "table nosuch",
                "scope link",
                "scope x",
                "protocol static",
                "protocol 18",
                "mtu 1400",
                "mtu lock 1400",
                "advmss x",
                "onlink",
                "no_track",
                "or 192.0.2.2",
                "tos 0x10",
                "realms 5",
                "expires 30",
                "pref high",
                "hoplimit 300",
                "rtt 10ms",
                "features ecn",
                "features x",
                "congctl cubic",
                "quickack 2",
                "from 2001:db8::/64",
                "frob 7",
                "nexthop via 192.0.2.1 dev {IF} weight 2 nexthop via 192.0.2.2",
                "nexthop via 192.0.2.1 weight 0",
                "ttl-propagate enabled",
                "inet6",
                "metric",
            ])
            .to_string(),
        );
    }
    if r.chance(20) {
        let n = w.len();
        w.swap(0, n - 1);
    }
    w.join(" ")
}

/// A `virtual_rules` / `static_rules` line.
fn gen_rule(r: &mut Rng) -> String {
    let mut w = Vec::new();
    for _ in 0..1 + r.below(4) {
        w.push(r.pick(&[
            "from 192.0.2.0/24",
            "to 198.51.100.0/24",
            "from all",
            "from 2001:db8::/64",
            "from x",
            "table 100",
            "lookup main",
            "table 0",
            "table nosuch",
            "priority 100",
            "preference x",
            "goto 5",
            "goto 500",
            "nop",
            "blackhole",
            "prohibit",
            "unicast",
            "fwmark 0x10/0xff",
            "fwmark x",
            "iif {IF}",
            "oif nosuch9",
            "not",
            "tos 16",
            "realms 3",
            "sport 80-90",
            "dport x",
            "ipproto tcp",
            "uidrange 1-2",
            "l3mdev",
            "suppress_prefixlength 0",
            "protocol 4",
            "no_track",
            "bogus",
            "inet6",
            "table",
        ]));
    }
    w.join(" ")
}

fn gen_value(r: &mut Rng, good: &[&str], bad: &[&str]) -> String {
    if r.chance(80) {
        r.pick(good).to_string()
    } else {
        r.pick(bad).to_string()
    }
}

/// Scripts of every kind keepalived's `check_script_secure()` tells apart,
/// made in `dir`: safe, world-writable, in a world-writable directory,
/// another user's (when run as root), through a symlink, not executable,
/// missing, and bare names found through `$PATH`.
fn make_scripts(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let open = dir.join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut made = Vec::new();
    for (name, mode) in [
        ("ok.sh", 0o755),
        ("ww.sh", 0o777),
        ("open/in.sh", 0o755),
        ("other.sh", 0o755),
        ("noexec.sh", 0o644),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        made.push(p.display().to_string());
    }
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::chown(dir.join("other.sh"), Some(65534), Some(65534)).unwrap();
    }
    let _ = std::os::unix::fs::symlink(dir.join("open/in.sh"), dir.join("link.sh"));
    made.push(dir.join("link.sh").display().to_string());
    made.push(dir.join("missing.sh").display().to_string());
    made.push("true".into());
    made.push("/bin/true".into());
    made.push(format!("\"{} arg\"", dir.join("ok.sh").display()));
    made
}

/// An interface VRRP may use here (not loopback), for the generated
/// `vrrp_instance` blocks; without one no VRRP block is generated.
fn vrrp_interface() -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
        .filter(|n| n != "lo")
        .collect();
    names.sort();
    names.into_iter().next()
}

/// A script command line, with the user that runs it maybe.
fn gen_script(r: &mut Rng, scripts: &[String]) -> String {
    scripts[r.below(scripts.len())].clone()
}

/// A `user`/`script_user` value: good users and groups, missing ones.
fn gen_user(r: &mut Rng) -> &'static str {
    r.pick(&[
        "root",
        "nobody",
        "nobody nogroup",
        "nobody daemon",
        "nosuchuser",
        "nobody nosuchgroup",
        "",
    ])
}

fn gen_checker(r: &mut Rng, out: &mut String, scripts: &[String]) {
    if r.chance(15) {
        out.push_str("    MISC_CHECK {\n");
        if r.chance(90) {
            out.push_str(&format!("        misc_path {}\n", gen_script(r, scripts)));
        }
        for _ in 0..r.below(3) {
            let line = match r.below(4) {
                0 => format!(
                    "misc_timeout {}",
                    gen_value(r, &["5", "10"], &["0", "-0", "x", "-3"])
                ),
                1 => "misc_dynamic".to_string(),
                2 => format!("user {}", gen_user(r)),
                _ => format!("delay_loop {}", gen_value(r, &["3"], &["-0", "0"])),
            };
            out.push_str(&format!("        {line}\n"));
        }
        out.push_str("    }\n");
        return;
    }
    if r.chance(8) {
        out.push_str("    BFD_CHECK {\n");
        if r.chance(80) {
            out.push_str(&format!(
                "        name {}\n",
                r.pick(&["b1", "b2", "nob", "", "b1 b2"])
            ));
        }
        if r.chance(30) {
            out.push_str("        alpha\n");
        }
        out.push_str("    }\n");
        return;
    }
    let kind = r.pick(&[
        "TCP_CHECK",
        "HTTP_GET",
        "SSL_GET",
        "DNS_CHECK",
        "SMTP_CHECK",
        "UDP_CHECK",
        "PING_CHECK",
    ]);
    out.push_str(&format!("    {kind} {{\n"));
    for _ in 0..r.below(4) {
        let line = match r.below(8) {
            0 => format!(
                "connect_timeout {}",
                gen_value(r, &["3", "1.5", "10"], &["0", "abc", "-1", "-0"])
            ),
            1 => format!(
                "connect_port {}",
                gen_value(r, &["80", "8080", "443"], &["0", "70000", "x"])
            ),
            2 => format!("retry {}", gen_value(r, &["0", "3"], &["-2", "z", "-0"])),
            3 => format!(
                "delay_before_retry {}",
                gen_value(r, &["2", "0.5"], &["-1", "q"])
            ),
            4 => format!(
                "connect_ip {}",
                gen_value(r, &["192.0.2.9", "2001:db8::9"], &["1.2.3", "host"])
            ),
            5 => format!(
                "delay_loop {}",
                gen_value(r, &["5", "2.5"], &["0", "x", "-0"])
            ),
            6 => format!("{} yes", r.pick(&["alpha", "log_all_failures"])),
            _ => r
                .pick(&[
                    "conect_timeout 3",
                    "bindto 192.0.2.8",
                    "fwmark 5",
                    "warmup 3",
                ])
                .to_string(),
        };
        out.push_str(&format!("        {line}\n"));
    }
    if kind == "HTTP_GET" || kind == "SSL_GET" {
        for _ in 0..r.below(3) {
            out.push_str("        url {\n");
            if r.chance(85) {
                out.push_str(&format!(
                    "            path /{}\n",
                    r.pick(&["", "health", "x?y=1"])
                ));
            }
            if r.chance(40) {
                out.push_str(&format!(
                    "            status_code {}\n",
                    r.pick(&["200", "200-299 404", "99", "300-200", "abc"])
                ));
            }
            if r.chance(20) {
                out.push_str(&format!(
                    "            digest {}\n",
                    r.pick(&["9b3a0c85a887a256d6939da88aabd8cd", "xyz"])
                ));
            }
            out.push_str("        }\n");
        }
    }
    out.push_str("    }\n");
}

fn gen_config(seed: u64, dir: &Path) -> String {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    // The classes added since (issue 42): their own stream, so that the
    // configs generated before stay as they were.
    let mut r2 = Rng(seed.wrapping_mul(0xD6E8_FEB8_6659_FD93) | 1);
    let scripts = make_scripts(dir);
    let mut out = String::new();
    if r.chance(40) {
        out.push_str("global_defs {\n");
        for _ in 0..r.below(4) {
            if r.chance(30) {
                // Any global keyword keepalived knows, with a value of
                // every kind (none, words, numbers out of every range,
                // an address, keyword-specific forms).
                // Not ours: keepalived reports an extension as unknown.
                let ours = extension_keywords();
                let globals: Vec<String> = keepalived::config::keywords::keyword_paths()
                    .into_iter()
                    .filter(|(s, _, _)| s == "global_defs")
                    .map(|(_, k, _)| k)
                    .filter(|k| !ours.contains(k))
                    .collect();
                let kw = &globals[r.below(globals.len())];
                let v = r.pick(&[
                    "",
                    "x",
                    "-1",
                    "0",
                    "1",
                    "yes",
                    "192.0.2.1",
                    "-0",
                    "1 2",
                    "99999999999",
                    "1.5",
                    "all 5",
                    "MTU",
                    "MTU ADVERT",
                    "IWGRP|IWOTH",
                    "IWGRP IWOTH",
                    "077",
                    "0x1f",
                    "01000",
                    "allow_if_changes",
                    "1 x",
                    "0.0005",
                    "true",
                    "off",
                ]);
                out.push_str(&format!("    {kw} {v}\n"));
                continue;
            }
            if r.chance(25) {
                let l = match r.below(4) {
                    0 => "enable_script_security".to_string(),
                    1 => format!("script_user {}", gen_user(&mut r)),
                    2 => format!(
                        "smtp_server {}",
                        r.pick(&[
                            "192.0.2.5",
                            "192.0.2.5 25",
                            "192.0.2.5 x",
                            "192.0.2.5 -0",
                            "192.0.2.5 70000",
                            "bad..host",
                            "",
                        ])
                    ),
                    _ => format!("smtp_connect_timeout {}", r.pick(&["30", "-0", "0", "x"])),
                };
                out.push_str(&format!("    {l}\n"));
                continue;
            }
            let l = r.pick(&[
                "router_id gen1",
                "lvs_flush",
                "lvs_flush_on_stop VS",
                "lvs_timeouts tcp 900 udp 60",
                "checker_log_all_failures",
                "rs_init_notifies",
                "smtp_connect_timeout 30",
                "routr_id x",
                "lvs_timeouts",
                "vrrp_version",
                "umask",
                "vrrp_garp_interval",
                "vmac_prefix",
                "dynamic_interfaces",
                "vrrp_priority 20",
                "vrrp_priority -5",
                "checker_rt_priority 0",
                "vrrp_garp_interval x",
                "vrrp_garp_interval 0.5",
                "vrrp_version 3",
                "vrrp_version 4",
                "vrrp_mcast_group4 224.0.0.18",
                "vrrp_mcast_group4 192.0.2.1",
                "vrrp_lower_prio_no_advert 1",
                "vrrp_netlink_cmd_rcv_bufs x",
                "vrrp_garp_master_repeat 0",
                "vrrp_strict",
                "notification_email {\n a@b\n}",
                "notification_email a@b",
                "bogus_block {\n x 1\n }",
            ]);
            out.push_str(&format!("    {l}\n"));
        }
        out.push_str("}\n");
    }
    if let Some(ifname) = vrrp_interface().filter(|_| r.chance(15)) {
        // The VRRP process's script audit: vrrp_script and notify scripts.
        if r.chance(70) {
            out.push_str(&format!(
                "vrrp_script chk {{\n    script {}\n",
                gen_script(&mut r, &scripts)
            ));
            if r.chance(30) {
                out.push_str(&format!("    user {}\n", gen_user(&mut r)));
            }
            out.push_str("    interval 2\n}\n");
        }
        out.push_str(&format!(
            "vrrp_instance VI {{\n    state BACKUP\n    interface {ifname}\n    virtual_router_id 51\n    priority 100\n    virtual_ipaddress {{\n        192.0.2.100\n    }}\n"
        ));
        if r.chance(50) {
            out.push_str(&format!(
                "    {} {}\n",
                r.pick(&["notify_master", "notify_backup", "notify"]),
                gen_script(&mut r, &scripts)
            ));
        }
        if r.chance(50) {
            let weight = r.pick(&["", " weight -10", " weight 0"]);
            out.push_str(&format!(
                "    track_script {{\n        chk{weight}\n    }}\n"
            ));
        }
        // The instance keywords with good and bad values, address lines
        // in their full syntax, tracking and unicast blocks.
        for _ in 0..r.below(6) {
            let l = match r.below(12) {
                10 => format!(
                    "virtual_routes {{\n{}    }}",
                    (0..1 + r.below(3))
                        .map(|_| format!(
                            "        {}\n",
                            gen_route(&mut r).replace("{IF}", &ifname)
                        ))
                        .collect::<String>()
                ),
                11 => format!(
                    "virtual_rules {{\n{}    }}",
                    (0..1 + r.below(3))
                        .map(|_| format!("        {}\n", gen_rule(&mut r).replace("{IF}", &ifname)))
                        .collect::<String>()
                ),
                0 => format!(
                    "state {}",
                    gen_value(&mut r, &["MASTER", "BACKUP"], &["Master", ""])
                ),
                1 => format!(
                    "priority {}",
                    gen_value(&mut r, &["1", "150", "255"], &["0", "256", "x", ""])
                ),
                2 => format!(
                    "advert_int {}",
                    gen_value(&mut r, &["1", "0.5", "3"], &["0", "300", "x", "50"])
                ),
                3 => format!("version {}", gen_value(&mut r, &["2", "3"], &["4", ""])),
                4 => r
                    .pick(&[
                        "nopreempt",
                        "preempt_delay 5",
                        "preempt_delay 2000",
                        "garp_master_delay x",
                        "garp_master_repeat 0",
                        "down_timer_adverts 101",
                        "strict_mode",
                        "strict_mode x",
                        "use_vmac",
                        "vmac_xmit_base",
                        "mcast_src_ip x",
                        "unicast_src_ip 192.0.2.1",
                        "mcast_dst_ip 192.0.2.1",
                        "unicast_ttl 300",
                        "debug 5",
                        "smtp_alert x",
                        "lvs_sync_daemon_interface eth0",
                        "virtual_router_id 0",
                        "garp_extra_if",
                        "kernel_rx_buf_size",
                        "old_unicast_checksum x",
                    ])
                    .to_string(),
                5 => format!(
                    "virtual_ipaddress {{\n        {}\n    }}",
                    r.pick(&[
                        "192.0.2.101/24 dev {IF} brd 192.0.2.255 scope link label {IF}:1",
                        "192.0.2.102/33",
                        "192.0.2.103 dev nosuch9",
                        "192.0.2.104 scope x",
                        "192.0.2.105 foo",
                        "2001:db8::105",
                        "192.0.2.106 label averyveryverylonglabel",
                        "192.0.2.107 brd x",
                        "192.0.2.108 brd +",
                        "192.0.2.109 preferred_lft x",
                        "x",
                    ])
                    .replace("{IF}", &ifname)
                ),
                6 => format!(
                    "track_interface {{\n        {}\n    }}",
                    r.pick(&[
                        "nosuch9",
                        "{IF} weight 10",
                        "lo weight 300",
                        "lo weight 254",
                        "lo foo",
                    ])
                    .replace("{IF}", &ifname)
                ),
                7 => format!(
                    "unicast_peer {{\n        {}\n    }}",
                    r.pick(&[
                        "192.0.2.2",
                        "x",
                        "192.0.2.3 min_ttl 5 max_ttl 2",
                        "192.0.2.4 foo",
                    ])
                ),
                8 => format!(
                    "authentication {{\n        {}\n    }}",
                    r.pick(&[
                        "auth_type PASS\n        auth_pass secret",
                        "auth_type PASS\n        auth_pass longer_than_8",
                        "auth_type AH\n        auth_pass k",
                        "auth_type XX",
                        "auth_type PASS",
                    ])
                ),
                _ => format!(
                    "{} {{\n        nosuch\n    }}",
                    r.pick(&["track_file", "track_process", "track_bfd"])
                ),
            };
            out.push_str(&format!("    {l}\n"));
        }
        out.push_str("}\n");
        if r.chance(25) {
            // A sync group: its members' weighted trackers dropped (or
            // kept with sync_group_tracking_weight / global_tracking), its
            // own track blocks, members that do not exist.
            out.push_str("vrrp_sync_group G {\n    group {\n        VI\n");
            if r.chance(30) {
                out.push_str("        NOPE\n");
            }
            out.push_str("    }\n");
            for _ in 0..r.below(3) {
                let l = r.pick(&[
                    "sync_group_tracking_weight",
                    "global_tracking",
                    "track_interface {\n        {IF} weight 5\n    }",
                    "track_interface {\n        nosuch9\n    }",
                    "track_script {\n        chk weight -20\n    }",
                    "track_script {\n        nope\n    }",
                    "track_file {\n        nosuch\n    }",
                    "smtp_alert",
                ]);
                out.push_str(&format!("    {}\n", l.replace("{IF}", &ifname)));
            }
            out.push_str("}\n");
        }
        if r.chance(15) {
            // The static blocks, read where they stand.
            let (kw, line) = match r.below(4) {
                0 => ("static_routes", gen_route(&mut r)),
                1 => ("static_rules", gen_rule(&mut r)),
                2 => (
                    "interface_up_down_delays",
                    r.pick(&[
                        "{IF} 2",
                        "{IF} 1.5 0.5",
                        "{IF} x",
                        "nosuch9 1",
                        "{IF} 1 300",
                        "{IF}",
                    ])
                    .to_string(),
                ),
                _ => (
                    "static_ipaddress",
                    r.pick(&[
                        "192.0.2.50/24 dev {IF}",
                        "192.0.2.400 dev {IF}",
                        "192.0.2.51 dev nosuch9",
                        "192.0.2.52/24 dev {IF} scope link",
                    ])
                    .to_string(),
                ),
            };
            out.push_str(&format!(
                "{kw} {{\n    {}\n}}\n",
                line.replace("{IF}", &ifname)
            ));
        }
        if r2.chance(20) {
            // An instance with no interface: unicast, VMAC, native_ipv6
            // before or after its addresses.
            out.push_str("vrrp_instance VI3 {\n    virtual_router_id 53\n");
            for _ in 0..1 + r2.below(4) {
                out.push_str(r2.pick(&[
                    "    use_vmac\n",
                    "    use_ipvlan\n",
                    "    native_ipv6\n",
                    "    unicast_peer {\n        192.0.2.7\n    }\n",
                    "    unicast_peer {\n        2001:db8::7\n    }\n",
                    "    virtual_ipaddress {\n        192.0.2.121\n    }\n",
                    "    virtual_ipaddress {\n        2001:db8::121\n    }\n",
                ]));
            }
            out.push_str("}\n");
        }
        if r2.chance(15) {
            // A garp_group naming interfaces that are not there.
            out.push_str(&format!(
                "garp_group {{\n    garp_interval 1\n{}}}\n",
                r2.pick(&[
                    "    interfaces {\n        nosuch9\n        {IF}\n        nosuch8\n    }\n",
                    "    interface nosuch9\n",
                    "    interfaces {\n        {IF}\n    }\n    interface nosuch7\n",
                    "    interfaces {\n    }\n",
                ])
                .replace("{IF}", &ifname)
            ));
        }
        if r.chance(30) {
            // A second instance: maybe the same VRID, maybe a sync group.
            let open = if r2.chance(10) { "" } else { " {" };
            out.push_str(&format!(
                "vrrp_instance VI2{open}\n    interface {ifname}\n    virtual_router_id {}\n    virtual_ipaddress {{\n        192.0.2.120\n    }}\n}}\n",
                r.pick(&["51", "52"])
            ));
            if r.chance(50) {
                out.push_str(r.pick(&[
                    "vrrp_sync_group G {\n    group {\n        VI\n        VI2\n    }\n}\n",
                    "vrrp_sync_group G {\n    group {\n        VI\n        nosuch\n    }\n}\n",
                    "vrrp_sync_group G {\n    group {\n        VI\n    }\n}\nvrrp_sync_group H {\n    group {\n        VI\n    }\n}\n",
                    "vrrp_sync_group G {\n    smtp_alert\n}\n",
                ]));
            }
        }
    }
    if r.chance(12) {
        // BFD sessions (checked as keepalived checks them, not run yet),
        // with every keyword and values in and out of range; sometimes
        // two with one name or one neighbour.
        for _ in 0..1 + r.below(2) {
            out.push_str(&format!(
                "bfd_instance {} {{\n",
                r.pick(&["b1", "b1", "b2", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGH"])
            ));
            for _ in 0..r.below(5) {
                let l = match r.below(8) {
                    0 | 1 => format!(
                        "{} {}",
                        r.pick(&["neighbor_ip", "neighbour_ip"]),
                        gen_value(
                            &mut r,
                            &["192.0.2.50", "192.0.2.51", "2001:db8::50"],
                            &["x", ""]
                        )
                    ),
                    2 => format!(
                        "source_ip {}",
                        gen_value(&mut r, &["192.0.2.60", "2001:db8::60"], &["1.2.3", ""])
                    ),
                    3 => format!(
                        "{} {}",
                        r.pick(&["min_rx", "min_tx", "idle_tx"]),
                        gen_value(
                            &mut r,
                            &["50", "1000", "1.5"],
                            &["0", "x", "999.9999", "4294968", ""]
                        )
                    ),
                    4 => format!(
                        "{} {}",
                        r.pick(&["multiplier", "ttl", "hoplimit"]),
                        gen_value(&mut r, &["3", "255", "64"], &["0", "256", "-1", ""])
                    ),
                    5 => format!(
                        "max_hops {}",
                        gen_value(&mut r, &["-1", "5", "64", "255"], &["-2", "256", "x"])
                    ),
                    6 => format!(
                        "weight {}",
                        gen_value(&mut r, &["10", "-253"], &["254", "1.5", ""])
                    ),
                    _ => r
                        .pick(&["passive", "vrrp", "checker", "bogus_bfd 1"])
                        .to_string(),
                };
                out.push_str(&format!("    {l}\n"));
            }
            out.push_str("}\n");
        }
    }
    if r.chance(12) {
        // A multi-line definition, with what may fall inside one: comments
        // with a trailing `\`, blank lines, conditionals, braces. (A comment
        // line without one ends the definition in keepalived's child
        // parses but not in its parent's: a deliberate difference,
        // docs/compat.md and tests/fixtures/invalid/definition_comment.)
        out.push_str("$VSDEF=lb_algo rr \\\n");
        for _ in 0..1 + r.below(4) {
            let l = r.pick(&[
                "    lb_kind NAT \\",
                "    protocol TCP \\",
                "# a comment \\",
                "! a comment \\",
                "    delay_loop 5 \\",
                "",
                "@gen persistence_timeout 30 \\",
                "@^gen persistence_timeout 40 \\",
                "    quorum 2 \\",
                "    real_server 192.0.2.77 80 { \\",
                "    } \\",
            ]);
            out.push_str(l);
            out.push('\n');
        }
        out.push_str(r.pick(&["    delay_loop 7\n", "    lb_kind DR\n", "\n"]));
    }
    if r.chance(30) {
        out.push_str(&format!(
            "$SCHED={}\n",
            r.pick(&["rr", "wrr", "lc", "bogus"])
        ));
    }
    if r.chance(20) {
        out.push_str(&format!(
            "@{} $PORT=80\n@^{} $PORT=81\n",
            r.pick(&["gen", "other"]),
            "gen"
        ));
    }
    if r.chance(15) {
        std::fs::write(
            dir.join("inc.conf"),
            "virtual_server 192.0.2.99 80 {\n lb_algo rr\n lb_kind NAT\n protocol TCP\n real_server 192.0.2.98 80 {\n }\n}\n",
        )
        .unwrap();
        out.push_str(r.pick(&[
            "include inc.conf\n",
            "include nomatch*.conf\n",
            "include inc.con\n",
        ]));
    }
    // (Alone: a second global_defs block is read differently by each of
    // keepalived's processes.)
    if r2.chance(8) && !out.contains("global_defs") {
        out.push_str(r2.pick(&[
            "global_defs {\n    lvs_sync_daemon eth0 VI\n    lvs_sync_daemon eth1 VI id 3\n}\n",
            "global_defs {\n    lvs_sync_daemon eth0\n    lvs_sync_daemon eth0 VI2\n}\n",
            // Options right after the interface: no positional instance.
            "global_defs {\n    lvs_sync_daemon lo id 5 maxlen 1400\n}\n",
            "global_defs {\n    lvs_sync_daemon lo port 8848 ttl 2 group 224.0.0.81\n}\n",
            "global_defs {\n    lvs_sync_daemon lo inst VI id 3\n}\n",
            "global_defs {\n    lvs_sync_daemon lo VI 5\n}\n",
            "global_defs {\n    lvs_sync_daemon lo id 5 7\n}\n",
            "global_defs {\n    lvs_sync_daemon lo inst\n}\n",
        ]));
    }
    if r2.chance(10) {
        out.push_str(r2.pick(&[
            "virtual_server_group E {\n}\n",
            "virtual_server_group E {\n    # none\n\n}\n",
            "virtual_server_group E {\n    192.0.2.60 80\n}\n",
        ]));
    }
    if r2.chance(10) {
        out.push_str(r2.pick(&[
            "track_file tf {\n    file /nonexistent/tf\n}\n",
            "track_file tf {\n}\n",
        ]));
    }
    for v in 0..1 + r.below(3) {
        let addr = gen_value(
            &mut r,
            &[
                "192.0.2.1 80",
                "192.0.2.2 443",
                "2001:db8::1 80",
                "fwmark 5",
                "192.0.2.3 0",
                "192.0.2.4",
            ],
            &["192.0.2 80", "192.0.2.5 99999"],
        );
        let addr = if r.chance(20) && out.contains("$PORT") {
            format!("192.0.2.{v} $PORT")
        } else {
            addr
        };
        // Its `{` on a line of its own, or missing: keepalived's processes
        // that skip the block read what follows at the top level. (Not
        // after an invalid address: keepalived reads that block into the
        // service before it, docs/compat.md.)
        let valid = !addr.contains("99999") && addr != "192.0.2 80" && !addr.contains('$');
        let open = if r2.chance(10) && valid {
            r2.pick(&["\n{\n", "\n"])
        } else {
            " {\n"
        };
        out.push_str(&format!("virtual_server {addr}{open}"));
        for _ in 0..r.below(7) {
            let l = match r.below(12) {
                0 => format!(
                    "lb_algo {}",
                    gen_value(&mut r, &["rr", "wlc", "sh", "mh"], &["foo"])
                ),
                1 => format!(
                    "lb_kind {}",
                    gen_value(&mut r, &["NAT", "DR", "TUN"], &["XX"])
                ),
                2 => format!(
                    "protocol {}",
                    gen_value(&mut r, &["TCP", "UDP", "tcp", "SCTP"], &["ICMP"])
                ),
                3 => format!(
                    "delay_loop {}",
                    gen_value(&mut r, &["6", "0.5"], &["abc", "0"])
                ),
                4 => format!(
                    "persistence_timeout {}",
                    gen_value(&mut r, &["300", ""], &["0", "9999999"])
                ),
                5 => format!(
                    "quorum {}",
                    gen_value(&mut r, &["1", "3", "10"], &["0", "x", "-0"])
                ),
                6 => format!("hysteresis {}", gen_value(&mut r, &["0", "1"], &["y"])),
                7 => format!(
                    "weight {}",
                    gen_value(&mut r, &["1", "5"], &["0", "-1", "-0"])
                ),
                8 => r
                    .pick(&[
                        "ops",
                        "alpha",
                        "omega",
                        "ha_suspend",
                        "inhibit_on_failure",
                        "sh-port",
                    ])
                    .to_string(),
                9 => format!(
                    "sorry_server {}",
                    gen_value(&mut r, &["192.0.2.200 80", "192.0.2.201"], &["1.1 80"])
                ),
                10 if r.chance(50) && out.contains("$VSDEF=") => "$VSDEF".to_string(),
                10 => "lb_algo $SCHED".to_string(),
                11 if r.chance(50) => format!(
                    "{} {}",
                    r.pick(&["quorum_up", "quorum_down"]),
                    gen_script(&mut r, &scripts)
                ),
                _ => r
                    .pick(&["lb_algoo rr", "protocl TCP", "real_servers x"])
                    .to_string(),
            };
            out.push_str(&format!("    {l}\n"));
        }
        let n_rs = r.below(4);
        for i in 0..n_rs {
            let rs = gen_value(
                &mut r,
                &[
                    "192.0.2.10 80",
                    "192.0.2.11 8080",
                    "2001:db8::10 80",
                    "192.0.2.12",
                ],
                &["192.0.2 80", "x 80"],
            );
            let rs = if i > 0 && r.chance(10) {
                "192.0.2.10 80".to_string()
            } else {
                rs
            };
            out.push_str(&format!("    real_server {rs} {{\n"));
            for _ in 0..r.below(3) {
                let l = match r.below(6) {
                    5 => format!(
                        "{} {}",
                        r.pick(&["notify_up", "notify_down"]),
                        gen_script(&mut r, &scripts)
                    ),
                    0 => format!(
                        "weight {}",
                        gen_value(&mut r, &["0", "2"], &["-1", "w", "-0"])
                    ),
                    1 => "inhibit_on_failure".to_string(),
                    2 => format!("uthreshold {}", gen_value(&mut r, &["100"], &["-5"])),
                    3 => "wieght 2".to_string(),
                    _ => format!("lvs_method {}", gen_value(&mut r, &["NAT", "DR"], &["YY"])),
                };
                out.push_str(&format!("        {l}\n"));
            }
            for _ in 0..r.below(3) {
                gen_checker(&mut r, &mut out, &scripts);
            }
            if r2.chance(6) {
                out.push_str(&format!(
                    "    FILE_CHECK {{\n{}    }}\n",
                    r2.pick(&[
                        "        track_file tf\n",
                        "        track_file nosuch\n",
                        "        track_file nosuch\n        weight 2\n",
                        "",
                    ])
                ));
            }
            out.push_str("    }\n");
        }
        if r.chance(5) {
            out.push_str("    ~SEQ(i, 1, 3) real_server 192.0.2.5$i 80 { weight $i }\n");
        }
        if !r.chance(5) {
            out.push_str("}\n");
        }
        if r.chance(4) {
            out.push_str("}\n");
        }
    }
    if r.chance(3) {
        // A NUL byte inside a line: keepalived's reader stops the line there.
        // Not in a line with a brace: a NUL that cuts a block's `{` off
        // makes keepalived act on freed memory (docs/compat.md).
        let lines: Vec<&str> = out.lines().collect();
        let plain: Vec<usize> = (0..lines.len())
            .filter(|&i| !lines[i].contains(['{', '}']))
            .collect();
        let at = if plain.is_empty() {
            lines.len() - 1
        } else {
            plain[r.below(plain.len())]
        };
        let line = lines[at];
        let cut = r.below(line.len() + 1);
        let mut with = lines[..at].join("\n");
        if at > 0 {
            with.push('\n');
        }
        with.push_str(&line[..cut]);
        with.push('\0');
        with.push_str(&line[cut..]);
        with.push('\n');
        for l in &lines[at + 1..] {
            with.push_str(l);
            with.push('\n');
        }
        out = with;
    }
    out
}

#[test]
#[cfg_attr(
    not(feature = "reference"),
    ignore = "needs keepalived 2.2.7 installed: cargo test --features reference"
)]
fn generated_configs_match_keepalived() {
    require_keepalived();
    let count: u64 = std::env::var("DIFF_CONFIGS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let base = std::env::temp_dir().join(format!("kargen-{}", std::process::id()));
    let mut diffs = Vec::new();
    let mut line_diffs = 0;
    let mut keepalived_crashed = 0;
    for seed in 0..count {
        let dir: PathBuf = base.join(seed.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let conf = gen_config(seed, &dir);
        std::fs::write(dir.join("k.conf"), &conf).unwrap();
        let (ka, ka_err) = run(KEEPALIVED, &dir, "k.conf");
        let (us, us_err) = run(ours(), &dir, "k.conf");
        if ka < 0 {
            // keepalived itself died on a signal: we must still give a verdict.
            keepalived_crashed += 1;
            assert!([0, 2, 4, 5, 6].contains(&us), "seed {seed}: ours exit {us}");
            continue;
        }
        let ours_at = our_lines(&us_err);
        // DIFF_TEXT=FILE: the messages (not only their lines) that one side
        // prints and the other does not, for configs without NUL bytes
        // (whose line numbers keepalived's first parse shifts). A survey,
        // not an assertion: wording is checked message by message in the
        // fixtures.
        if let (Ok(path), false) = (std::env::var("DIFF_TEXT"), conf.contains('\0')) {
            let ka_msgs: BTreeSet<String> = ka_err
                .lines()
                .filter_map(|l| {
                    let i = l.find("Line ")?;
                    let rest = &l[i + 5..];
                    let end = rest.find(')')?;
                    Some(format!("{}: {}", &rest[..end], rest[end + 1..].trim()))
                })
                .collect();
            let our_msgs: BTreeSet<String> = us_err
                .lines()
                .filter_map(|l| {
                    let rest = l.strip_prefix("k.conf:")?;
                    let (n, rest) = rest.split_once(':')?;
                    let msg = ["error: ", "warning: ", "note: "]
                        .iter()
                        .find_map(|k| rest.split_once(k).map(|x| x.1))?;
                    Some(format!("{n}: {}", msg.trim()))
                })
                .collect();
            if ka_msgs != our_msgs {
                let mut rep = format!("== seed {seed}\n");
                for m in ka_msgs.difference(&our_msgs) {
                    rep.push_str(&format!("ka-only   {m}\n"));
                }
                for m in our_msgs.difference(&ka_msgs) {
                    rep.push_str(&format!("ours-only {m}\n"));
                }
                use std::io::Write;
                if let Ok(mut f) = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&path)
                {
                    let _ = f.write_all(rep.as_bytes());
                }
            }
        }
        if ka != 2 && ka_lines_real(&ka_err, &conf, &ours_at, &us_err) != ours_at {
            line_diffs += 1;
            // DIFF_REPORT=FILE: what each side reports on lines the other
            // does not, for working down the ratchet below.
            if let Ok(path) = std::env::var("DIFF_REPORT") {
                let (k, o) = (
                    ka_lines_real(&ka_err, &conf, &ours_at, &us_err),
                    ours_at.clone(),
                );
                let mut rep = format!("== seed {seed}\n");
                for l in ka_err.lines() {
                    if ka_lines_real(l, &conf, &o, &us_err)
                        .iter()
                        .any(|n| !o.contains(n))
                    {
                        rep.push_str(&format!("ka-only  {l}\n"));
                    }
                }
                for l in us_err.lines() {
                    if our_lines(l).iter().any(|n| !k.contains(n)) {
                        rep.push_str(&format!("ours-only {l}\n"));
                    }
                }
                rep.push_str(&format!("--- config\n{conf}--- end\n"));
                use std::io::Write;
                if let Ok(mut f) = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&path)
                {
                    let _ = f.write_all(rep.as_bytes());
                }
            }
        }
        if ka != us {
            diffs.push(format!(
                "seed {seed}: keepalived exit {ka} lines {:?}, ours exit {us} lines {:?}\n--- config\n{conf}--- keepalived\n{ka_err}--- ours\n{us_err}",
                ka_lines(&ka_err),
                our_lines(&us_err)
            ));
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    println!(
        "{count} generated configs compared: {} exit-code differences, {line_diffs} with a different set of error lines, keepalived crashed on {keepalived_crashed}",
        diffs.len()
    );
    if diffs.is_empty() {
        let _ = std::fs::remove_dir_all(&base);
    }
    // Every config must report problems on the same lines as keepalived
    // (DIFF_REPORT=FILE lists what differs when this fails).
    assert_eq!(
        line_diffs, 0,
        "{line_diffs} configs report different error lines from keepalived"
    );
    assert!(
        diffs.is_empty(),
        "{} of {count} differ; first ones:\n{}",
        diffs.len(),
        diffs.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// Our extension keywords: every table of every "Extensions of
/// keepalived-rs" section of grammar/keywords.md.
fn extension_keywords() -> Vec<String> {
    let md =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("grammar/keywords.md"))
            .expect("grammar/keywords.md");
    let mut extensions: Vec<String> = Vec::new();
    let mut in_ext = false;
    let mut in_table = false;
    for l in md.lines() {
        if l.starts_with("### ") {
            in_ext = l.starts_with("### Extensions of keepalived-rs");
            in_table = false;
        } else if in_ext && l.starts_with("| keyword | arguments") {
            in_table = true;
        } else if in_table && !l.starts_with('|') {
            in_table = false;
        } else if in_table {
            if let Some((k, _)) = l.strip_prefix("| `").and_then(|l| l.split_once('`')) {
                extensions.push(k.to_string());
            }
        }
    }
    extensions
}

/// The line that opens a section of `keyword_paths()` in a minimal config.
fn opener(segment: &str) -> String {
    match segment {
        "virtual_server" => "virtual_server 192.0.2.1 80 {".into(),
        "real_server" => "real_server 192.0.2.2 80 {".into(),
        "global_defs" | "SSL" | "authentication" | "url" | "host" => format!("{segment} {{"),
        s if s.ends_with("_CHECK") || s.ends_with("_GET") => format!("{s} {{"),
        named => format!("{named} X {{"),
    }
}

/// A minimal config with `line` inside the blocks of `section`
/// (`virtual_server/real_server/...`, as `keyword_paths()` names them).
fn inside(section: &str, line: &str) -> String {
    let segments: Vec<&str> = section.split('/').filter(|s| !s.is_empty()).collect();
    let mut conf = String::new();
    for s in &segments {
        conf.push_str(&opener(s));
        conf.push('\n');
    }
    conf.push_str(line);
    conf.push('\n');
    conf.push_str(&"}\n".repeat(segments.len()));
    conf
}

#[test]
#[cfg_attr(
    not(feature = "reference"),
    ignore = "needs keepalived 2.2.7 installed: cargo test --features reference"
)]
fn every_keyword_we_accept_is_a_keepalived_keyword() {
    require_keepalived();
    let dir = std::env::temp_dir().join(format!("karkw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut unknown = Vec::new();
    let paths = keepalived::config::keywords::keyword_paths();
    for (section, kw, _) in &paths {
        let conf = inside(section, &format!("{kw} 1"));
        std::fs::write(dir.join("k.conf"), &conf).unwrap();
        let (_, err) = run(KEEPALIVED, &dir, "k.conf");
        if err.contains(&format!("Unknown keyword '{kw}'")) {
            unknown.push(format!("{section}/{kw}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{} keywords checked against keepalived 2.2.7", paths.len());
    // Our extensions, documented as such in grammar/keywords.md: keepalived
    // must not know them (else they would not be extensions), and nothing
    // else may be unknown to it.
    let extensions = extension_keywords();
    assert!(
        !extensions.is_empty(),
        "no extension table in grammar/keywords.md"
    );
    let name = |path: &String| path.rsplit('/').next().unwrap_or(path).to_string();
    for e in &extensions {
        assert!(
            unknown.iter().any(|u| &name(u) == e),
            "{e} is listed as our extension but keepalived knows it"
        );
    }
    unknown.retain(|k| !extensions.contains(&name(k)));
    assert!(
        unknown.is_empty(),
        "keepalived 2.2.7 does not know: {unknown:?}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "reference"),
    ignore = "needs keepalived 2.2.7 installed: cargo test --features reference"
)]
fn every_keyword_without_its_value_gets_keepalived_s_exit_code() {
    // keepalived answers a missing value with its missing-parameter error
    // (exit 2) for some keywords and with a keyword's own message (exit 5)
    // or nothing for others.
    require_keepalived();
    let dir = std::env::temp_dir().join(format!("karmv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut diffs = Vec::new();
    let paths = keepalived::config::keywords::keyword_paths();
    for (section, kw, _) in &paths {
        let conf = inside(section, kw);
        std::fs::write(dir.join("k.conf"), &conf).unwrap();
        let (ka, _) = run(KEEPALIVED, &dir, "k.conf");
        let (us, _) = run(ours(), &dir, "k.conf");
        if ka >= 0 && ka != us {
            diffs.push(format!("{section}/{kw}: keepalived {ka}, ours {us}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{} keywords checked without a value, {} differ:\n{}",
        paths.len(),
        diffs.len(),
        diffs.join("\n")
    );
    assert!(
        diffs.is_empty(),
        "{} keywords without a value differ from keepalived:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
