//! FRR's `bfdd` as a BFD peer nobody here wrote, in a namespace of the
//! lab (`super::lab`): started, configured through `vtysh`, stopped.

use super::lab::Lab;

/// FRR's `bfdd` (with the `zebra` it needs) in the lab's third namespace
/// (192.0.2.10, 2001:db8::10), run as user frr with private sockets in the
/// lab's directory (as `../shared/reference/bfd.md` §8.1 ran it).
pub struct Frr {
    ns: String,
    /// Its directory (sockets, pid files, logs).
    pub dir: std::path::PathBuf,
    children: Vec<std::process::Child>,
}

impl Frr {
    /// Starts `zebra` and `bfdd` with `conf` in the lab's third namespace.
    pub fn start(lab: &Lab, conf: &str) -> Frr {
        let dir = lab.dir.join("frr");
        std::fs::create_dir_all(&dir).unwrap();
        super::lab::must(&["chown", "frr:frr", &dir.display().to_string()]);
        let cf = dir.join("bfdd.conf");
        std::fs::write(&cf, conf).unwrap();
        let ns = lab.ns(3);
        let d = dir.display().to_string();
        let mut children = Vec::new();
        for (daemon, conf) in [
            ("zebra", "/dev/null".to_string()),
            ("bfdd", cf.display().to_string()),
        ] {
            let log = std::fs::File::create(dir.join(format!("{daemon}.log"))).unwrap();
            let c = std::process::Command::new("ip")
                .args(["netns", "exec", &ns, &format!("/usr/lib/frr/{daemon}")])
                .args(["-u", "frr", "-g", "frr", "-z", &format!("{d}/zserv.api")])
                .args([
                    "-i",
                    &format!("{d}/{daemon}.pid"),
                    "--vty_socket",
                    &d,
                    "-f",
                    &conf,
                ])
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("FRR (apt-get install frr: scripts/test.sh installs it)");
            children.push(c);
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        Frr { ns, dir, children }
    }

    /// `vtysh -c CMD...`: its output.
    pub fn vtysh(&self, cmds: &[&str]) -> String {
        let mut c = std::process::Command::new("ip");
        c.args(["netns", "exec", &self.ns, "vtysh", "--vty_socket"])
            .arg(&self.dir);
        for x in cmds {
            c.args(["-c", x]);
        }
        let o = c.output().expect("vtysh");
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
    }

    /// `peer ...` configured with `line`.
    pub fn peer(&self, peer: &str, line: &str) {
        self.vtysh(&["configure terminal", "bfd", peer, line]);
    }
}

impl Drop for Frr {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        // The daemons' own processes (started through `ip netns exec`).
        for d in ["bfdd", "zebra"] {
            if let Ok(p) = std::fs::read_to_string(self.dir.join(format!("{d}.pid"))) {
                let _ = super::lab::sh(&["kill", "-9", p.trim()]);
            }
        }
    }
}
