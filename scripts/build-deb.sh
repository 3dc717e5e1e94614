#!/usr/bin/env bash
# Builds the Debian package, target/debian/keepalived-rs_VERSION_ARCH.deb,
# with debhelper from packaging/debian (README: "Debian package").
#
# debhelper rather than cargo-deb: the unit, conffile, maintainer scripts
# (dh_installsystemd), man pages and shlibs dependencies come out as in
# Debian's own keepalived package, and lintian knows its output; cargo-deb
# would need its own crate and re-describe all of that in Cargo.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v dh >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q debhelper >/dev/null
fi
cargo build --release --locked --bin keepalived --bin genhash
# dh works on ./debian; a copy keeps packaging/ free of build output.
rm -rf debian
cp -r packaging/debian debian
trap 'rm -rf debian' EXIT
mkdir -p target/debian
rm -f target/debian/*.deb target/debian/*.ddeb
debian/rules binary >target/debian/build.log 2>&1 || {
    tail -40 target/debian/build.log
    exit 1
}
ls target/debian/keepalived-rs_*.deb
