#!/usr/bin/env bash
# The project's test command (README): formatting, lints, and every test,
# including the side-by-side runs against keepalived 2.2.7.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test
