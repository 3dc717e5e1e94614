//! The `genhash` binary: keepalived's digest tool (see
//! [`keepalived::genhash`]).

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let prog = args.first().map_or("genhash", String::as_str);
    keepalived::genhash::main(prog, args.get(1..).unwrap_or(&[]))
}
