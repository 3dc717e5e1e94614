//! The Debian package: `scripts/build-deb.sh` builds it, lintian finds no
//! error, and in a fresh Debian root (debootstrap, minbase) it installs with
//! dpkg, runs, accepts the examples, and its removal leaves the operator's
//! configuration in place.
//!
//! Needs root (debootstrap, chroot) and Debian's network mirror. The base
//! root is kept in `target/debroot-base` between local runs and copied
//! afresh for each run, so every install starts from a clean system.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn apt_install(tool: &str, package: &str) {
    if Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return;
    }
    run(Command::new("apt-get")
        .args(["install", "-y", "-q", package])
        .env("DEBIAN_FRONTEND", "noninteractive"));
}

fn chroot(root: &Path, args: &[&str]) -> Output {
    Command::new("chroot")
        .arg(root)
        .args(args)
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .output()
        .expect("chroot")
}

#[test]
#[cfg_attr(
    not(feature = "package"),
    ignore = "needs root, debhelper, lintian and debootstrap with a mirror: cargo test --features package"
)]
fn the_debian_package_builds_passes_lintian_installs_and_removes_cleanly() {
    assert!(
        nix::unistd::Uid::effective().is_root(),
        "the package test needs root (debootstrap, chroot)"
    );
    let top = root_dir();
    // 1. The one documented command.
    let out = run(Command::new(top.join("scripts/build-deb.sh")).current_dir(&top));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let deb = top.join(stdout.lines().last().expect("the .deb's path").trim());
    assert!(deb.exists(), "{}", deb.display());

    // 2. lintian: no errors.
    apt_install("lintian", "lintian");
    let l = Command::new("lintian")
        .args(["--fail-on", "error", "--no-tag-display-limit"])
        .arg(&deb)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&l.stdout);
    assert!(l.status.success(), "lintian:\n{text}");
    assert!(
        !text.lines().any(|l| l.starts_with("E:")),
        "lintian:\n{text}"
    );

    // 3. A fresh Debian root.
    apt_install("debootstrap", "debootstrap");
    let base = top.join("target/debroot-base");
    if !base.join("var/lib/dpkg/status").exists() {
        let _ = std::fs::remove_dir_all(&base);
        run(Command::new("debootstrap")
            .args(["--variant=minbase", "bookworm"])
            .arg(&base)
            .arg("http://deb.debian.org/debian"));
    }
    let sys = top.join("target/debroot-test");
    let _ = std::fs::remove_dir_all(&sys);
    run(Command::new("cp").arg("-a").arg(&base).arg(&sys));
    std::fs::copy(&deb, sys.join("tmp/keepalived-rs.deb")).unwrap();

    // 4. dpkg -i, then the binaries run.
    let i = chroot(&sys, &["dpkg", "-i", "/tmp/keepalived-rs.deb"]);
    assert!(
        i.status.success(),
        "dpkg -i:\n{}\n{}",
        String::from_utf8_lossy(&i.stdout),
        String::from_utf8_lossy(&i.stderr)
    );
    let v = chroot(&sys, &["/usr/sbin/keepalived", "--version"]);
    assert!(v.status.success());
    let vtext =
        String::from_utf8_lossy(&v.stderr).to_string() + &String::from_utf8_lossy(&v.stdout);
    assert!(vtext.contains("keepalived-rs"), "{vtext}");
    let g = chroot(&sys, &["/usr/bin/genhash", "-h"]);
    assert!(
        String::from_utf8_lossy(&g.stderr).contains("Usage"),
        "{g:?}"
    );

    // 5. The examples it ships are accepted by keepalived -t there.
    let mut n = 0;
    for e in std::fs::read_dir(top.join("examples")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.ends_with(".conf") {
            continue;
        }
        let shipped = format!("/usr/share/doc/keepalived-rs/examples/{name}");
        assert!(sys.join(&shipped[1..]).exists(), "{shipped} not installed");
        let t = chroot(&sys, &["/usr/sbin/keepalived", "-t", "-f", &shipped]);
        assert_eq!(
            t.status.code(),
            Some(0),
            "keepalived -t -f {shipped}:\n{}",
            String::from_utf8_lossy(&t.stderr)
        );
        n += 1;
    }
    assert!(n >= 5, "examples: {n}");

    // 6. The unit is Debian's shape; the defaults file is a conffile.
    let unit = std::fs::read_to_string(sys.join("lib/systemd/system/keepalived.service")).unwrap();
    for want in [
        "Type=notify",
        "ExecStart=/usr/sbin/keepalived --dont-fork $DAEMON_ARGS",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "ConditionFileNotEmpty=/etc/keepalived/keepalived.conf",
        "EnvironmentFile=-/etc/default/keepalived",
    ] {
        assert!(
            unit.lines().any(|l| l == want),
            "{want:?} not in the unit:\n{unit}"
        );
    }
    let conffiles = chroot(
        &sys,
        &[
            "dpkg-query",
            "--showformat=${Conffiles}",
            "--show",
            "keepalived-rs",
        ],
    );
    assert!(
        String::from_utf8_lossy(&conffiles.stdout).contains("/etc/default/keepalived"),
        "{conffiles:?}"
    );
    let provides = chroot(
        &sys,
        &[
            "dpkg-query",
            "--showformat=${Provides} ${Conflicts} ${Replaces}",
            "--show",
            "keepalived-rs",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&provides.stdout),
        "keepalived keepalived keepalived"
    );

    // 7. Removal keeps the operator's configuration.
    std::fs::copy(
        top.join("examples/nat-http.conf"),
        sys.join("etc/keepalived/keepalived.conf"),
    )
    .unwrap();
    let r = chroot(&sys, &["dpkg", "-r", "keepalived-rs"]);
    assert!(r.status.success(), "dpkg -r: {r:?}");
    assert!(!sys.join("usr/sbin/keepalived").exists());
    assert!(sys.join("etc/keepalived/keepalived.conf").exists());
    assert!(
        sys.join("etc/default/keepalived").exists(),
        "conffiles stay until purge"
    );
    let _ = std::fs::remove_dir_all(&sys);
}
