//! net-snmp's `snmpd` as the AgentX master nobody here wrote, in the lab's
//! third namespace: its AgentX socket in the lab's directory (a path, so
//! the directors' subagents reach it from their namespaces), SNMP on that
//! namespace's loopback, walked with `snmpwalk`; its notifications sent to
//! an `snmptrapd` there.

use super::lab::Lab;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A running `snmpd`.
pub struct Snmpd {
    ns: String,
    /// The AgentX master socket.
    pub socket: PathBuf,
    dir: PathBuf,
    child: Option<Child>,
    trapd: Option<Child>,
}

impl Snmpd {
    /// Starts it (its socket ready when this returns).
    pub fn start(lab: &Lab) -> Snmpd {
        let dir = lab.dir.join("snmpd");
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Snmpd {
            ns: lab.ns(3),
            socket: dir.join("master"),
            dir,
            child: None,
            trapd: None,
        };
        let tconf = s.dir.join("snmptrapd.conf");
        std::fs::write(
            &tconf,
            "authCommunity log public\ndisableAuthorization yes\n",
        )
        .unwrap();
        let log = std::fs::File::create(s.dir.join("traps.log")).unwrap();
        s.trapd = Some(
            Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &s.ns,
                    "/usr/sbin/snmptrapd",
                    "-f",
                    "-Lo",
                    "-C",
                    "-On",
                    "-c",
                ])
                .arg(&tconf)
                .arg("udp:127.0.0.1:16162")
                .env("MIBS", "")
                .env("MIBDIRS", &s.dir)
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .stdin(Stdio::null())
                .spawn()
                .expect("snmptrapd (apt-get install snmptrapd: scripts/test.sh installs it)"),
        );
        s.restart();
        s
    }

    /// The notifications received so far, one line each (varbinds
    /// tab-separated, numeric), in order.
    pub fn traps(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("traps.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(".1.3.6.1.6.3.1.1.4.1.0 = OID:"))
            .map(str::to_string)
            .collect()
    }

    /// Starts it again (after [`Snmpd::stop`]).
    pub fn restart(&mut self) {
        let conf = self.dir.join("snmpd.conf");
        std::fs::write(
            &conf,
            format!(
                "agentAddress udp:127.0.0.1:16161\nmaster agentx\nagentXSocket {}\n\
                 agentXPerms 0770 0770\nrocommunity public 127.0.0.1\n\
                 trap2sink 127.0.0.1:16162 public\n",
                self.socket.display()
            ),
        )
        .unwrap();
        let _ = std::fs::remove_file(&self.socket);
        let log = std::fs::File::create(self.dir.join("snmpd.log")).unwrap();
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "/usr/sbin/snmpd",
                "-f",
                "-Lo",
                "-C",
                "-c",
            ])
            .arg(&conf)
            .arg("-p")
            .arg(self.dir.join("snmpd.pid"))
            // No MIB files: numeric output, and no noise about missing ones.
            .env("MIBS", "")
            .env("MIBDIRS", &self.dir)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("snmpd (apt-get install snmpd: scripts/test.sh installs it)");
        self.child = Some(child);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !self.socket.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(self.socket.exists(), "snmpd made no AgentX socket");
    }

    /// Stops it (SIGTERM).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            if let Ok(pid) = std::fs::read_to_string(self.dir.join("snmpd.pid")) {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
            let _ = c.wait();
        }
    }

    /// `snmpwalk -v2c -On` of `oid`: its lines (numeric OIDs, no MIB).
    pub fn walk(&self, oid: &str) -> Vec<String> {
        self.tool("snmpwalk", oid)
    }

    /// `snmpbulkwalk` likewise.
    pub fn bulkwalk(&self, oid: &str) -> Vec<String> {
        self.tool("snmpbulkwalk", oid)
    }

    fn tool(&self, tool: &str, oid: &str) -> Vec<String> {
        let o = Command::new("ip")
            .args([
                "netns", "exec", &self.ns, tool, "-v2c", "-c", "public", "-On",
            ])
            .args(["-t", "2", "-r", "1", "127.0.0.1:16161", oid])
            .env("MIBS", "")
            .env("MIBDIRS", &self.dir)
            .output()
            .unwrap_or_else(|e| panic!("{tool} (apt-get install snmp): {e}"));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Snmpd {
    fn drop(&mut self) {
        self.stop();
        if let Some(mut t) = self.trapd.take() {
            let _ = t.kill();
            let _ = t.wait();
        }
    }
}
