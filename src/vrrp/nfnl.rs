//! The nfnetlink socket the VRRP address worker sends
//! [`super::nftables`]' batches on (I/O shell): one write per batch, then
//! the kernel's acknowledgements read back so that a refusal is reported
//! with its errno rather than lost.

use super::nftables::Request;
use netlink_sys::{protocols::NETLINK_NETFILTER, Socket, SocketAddr};

/// `NLMSG_ERROR`: an acknowledgement (error 0) or a refusal.
const NLMSG_ERROR: u16 = 2;

/// A bound NETLINK_NETFILTER socket.
pub struct NfSocket {
    sock: Socket,
}

impl NfSocket {
    /// Opens and binds the socket; acknowledgements wait at most a second.
    pub fn open() -> std::io::Result<NfSocket> {
        let mut sock = Socket::new(NETLINK_NETFILTER)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        let tv = nix::sys::time::TimeVal::new(1, 0);
        nix::sys::socket::setsockopt(&sock, nix::sys::socket::sockopt::ReceiveTimeout, &tv)
            .map_err(std::io::Error::from)?;
        Ok(NfSocket { sock })
    }

    /// Sends one batch; the errnos of the messages the kernel refused
    /// (the whole batch is then undone by the kernel).
    pub fn send(&self, req: &Request) -> std::io::Result<Vec<i32>> {
        self.sock.send(&req.bytes, 0)?;
        let mut errors = Vec::new();
        let mut seen = 0;
        let mut buf = vec![0u8; 16384];
        while seen < req.acks {
            let n = match self.sock.recv(&mut &mut buf[..], 0) {
                Ok(n) => n,
                // A timeout: what was missing is not coming.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            };
            let mut at = 0;
            while at + 16 <= n {
                let len = u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap_or([0; 4])) as usize;
                let kind = u16::from_ne_bytes([buf[at + 4], buf[at + 5]]);
                if len < 16 || at + len > n {
                    break;
                }
                if kind == NLMSG_ERROR && len >= 20 {
                    let code =
                        i32::from_ne_bytes(buf[at + 16..at + 20].try_into().unwrap_or([0; 4]));
                    if code != 0 {
                        errors.push(-code);
                    }
                    seen += 1;
                }
                at += (len + 3) & !3;
            }
        }
        Ok(errors)
    }
}
