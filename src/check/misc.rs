//! MISC_CHECK (`check_misc.c`): a script run through
//! [`crate::services::scripts`]; exit 0 passes (with `misc_dynamic` also
//! 2..255, which set the weight); anything else, a signal or the timeout
//! fails. Pure: the verdict on a script's end.

use super::conn::Failure;
use crate::services::scripts::{ScriptEnd, ScriptError};

/// MISC_CHECK's verdict on a script's end: `Ok(Some(status))` for a
/// dynamic weight status (2..255), `Ok(None)` for a plain pass.
pub fn verdict(end: ScriptEnd, dynamic: bool) -> Result<Option<u8>, Failure> {
    match end {
        ScriptEnd::Exited(0) => Ok(None),
        ScriptEnd::Exited(s @ 2..=255) if dynamic => Ok(Some(s as u8)),
        ScriptEnd::Exited(s) => Err(Failure::Protocol(format!("exited with status {s}"))),
        ScriptEnd::Signaled(s) => Err(Failure::Protocol(format!("killed by signal {s}"))),
        ScriptEnd::TimedOut => Err(Failure::Protocol("timed out".into())),
    }
}

impl From<ScriptError> for Failure {
    fn from(e: ScriptError) -> Failure {
        match e {
            ScriptError::Io(what, e) => Failure::Io(what, e),
            e => Failure::Protocol(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(verdict(ScriptEnd::Exited(0), false).unwrap(), None);
        assert!(verdict(ScriptEnd::Exited(1), true).is_err());
        assert!(verdict(ScriptEnd::Exited(5), false).is_err());
        assert_eq!(verdict(ScriptEnd::Exited(5), true).unwrap(), Some(5));
        assert!(verdict(ScriptEnd::Signaled(9), true).is_err());
        assert!(verdict(ScriptEnd::TimedOut, true).is_err());
    }
}
