//! The family's commands (`IPVS_CMD_*`), as netlink-packet-generic's
//! families spell theirs: an enum, to and from the wire's `u8`.

/// `IPVS_CMD_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpvsCmd {
    /// `IPVS_CMD_NEW_SERVICE`.
    NewService,
    /// `IPVS_CMD_SET_SERVICE`.
    SetService,
    /// `IPVS_CMD_DEL_SERVICE`.
    DelService,
    /// `IPVS_CMD_GET_SERVICE`.
    GetService,
    /// `IPVS_CMD_NEW_DEST`.
    NewDest,
    /// `IPVS_CMD_SET_DEST`.
    SetDest,
    /// `IPVS_CMD_DEL_DEST`.
    DelDest,
    /// `IPVS_CMD_GET_DEST`.
    GetDest,
    /// `IPVS_CMD_NEW_DAEMON`.
    NewDaemon,
    /// `IPVS_CMD_DEL_DAEMON`.
    DelDaemon,
    /// `IPVS_CMD_GET_DAEMON`.
    GetDaemon,
    /// `IPVS_CMD_SET_CONFIG`.
    SetConfig,
    /// `IPVS_CMD_GET_CONFIG`.
    GetConfig,
    /// `IPVS_CMD_SET_INFO`.
    SetInfo,
    /// `IPVS_CMD_GET_INFO`.
    GetInfo,
    /// `IPVS_CMD_ZERO`.
    Zero,
    /// `IPVS_CMD_FLUSH`.
    Flush,
    /// A command this code does not know.
    Other(u8),
}

impl From<IpvsCmd> for u8 {
    fn from(c: IpvsCmd) -> u8 {
        match c {
            IpvsCmd::NewService => 1,
            IpvsCmd::SetService => 2,
            IpvsCmd::DelService => 3,
            IpvsCmd::GetService => 4,
            IpvsCmd::NewDest => 5,
            IpvsCmd::SetDest => 6,
            IpvsCmd::DelDest => 7,
            IpvsCmd::GetDest => 8,
            IpvsCmd::NewDaemon => 9,
            IpvsCmd::DelDaemon => 10,
            IpvsCmd::GetDaemon => 11,
            IpvsCmd::SetConfig => 12,
            IpvsCmd::GetConfig => 13,
            IpvsCmd::SetInfo => 14,
            IpvsCmd::GetInfo => 15,
            IpvsCmd::Zero => 16,
            IpvsCmd::Flush => 17,
            IpvsCmd::Other(n) => n,
        }
    }
}

impl From<u8> for IpvsCmd {
    fn from(n: u8) -> IpvsCmd {
        match n {
            1 => IpvsCmd::NewService,
            2 => IpvsCmd::SetService,
            3 => IpvsCmd::DelService,
            4 => IpvsCmd::GetService,
            5 => IpvsCmd::NewDest,
            6 => IpvsCmd::SetDest,
            7 => IpvsCmd::DelDest,
            8 => IpvsCmd::GetDest,
            9 => IpvsCmd::NewDaemon,
            10 => IpvsCmd::DelDaemon,
            11 => IpvsCmd::GetDaemon,
            12 => IpvsCmd::SetConfig,
            13 => IpvsCmd::GetConfig,
            14 => IpvsCmd::SetInfo,
            15 => IpvsCmd::GetInfo,
            16 => IpvsCmd::Zero,
            17 => IpvsCmd::Flush,
            n => IpvsCmd::Other(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_round_trips_with_the_kernel_s_numbers() {
        // linux/ip_vs.h: IPVS_CMD_NEW_SERVICE = 1 ... IPVS_CMD_FLUSH = 17.
        assert_eq!(u8::from(IpvsCmd::NewService), 1);
        assert_eq!(u8::from(IpvsCmd::Flush), 17);
        for n in 0..=u8::MAX {
            assert_eq!(u8::from(IpvsCmd::from(n)), n);
        }
    }
}
