//! Root for a command that builds testbeds: without it, the command runs
//! itself again as root of a user namespace of its own (`unshare --user
//! --map-root-user --net`), where it may make its namespaces without the
//! host's root.

use std::os::unix::process::CommandExt;

/// The environment variable a command re-executed in a user namespace of
/// its own carries, so that it does not try again.
const IN_USER_NAMESPACE: &str = "SCPS_BENCH_IN_USER_NAMESPACE";

/// Why a command cannot have root for its testbeds.
#[derive(Debug, thiserror::Error)]
pub enum UserNamespaceError {
    #[error("the testbed needs root or a user namespace, and this user namespace is not root in itself")]
    NotRootInside,
    #[error("cannot find the scps binary")]
    NoBinary(#[source] std::io::Error),
    #[error(
        "the testbed needs root, or a user namespace of its own, and `unshare --user --map-root-user` could not \
         run: {0}"
    )]
    Unshare(std::io::Error),
}

/// Returns at once as root. Else runs this command again, with the same
/// arguments, as root of a user namespace of its own, and does not
/// return, unless that cannot be done: then the reason.
pub fn enter_unless_root() -> Result<(), UserNamespaceError> {
    let inside_already = std::env::var_os(IN_USER_NAMESPACE).is_some();
    if !must_enter(nix::unistd::geteuid().is_root(), inside_already)? {
        return Ok(());
    }
    let me = std::env::current_exe().map_err(UserNamespaceError::NoBinary)?;
    let error = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--net", "--"])
        .arg(me)
        .args(std::env::args_os().skip(1))
        .env(IN_USER_NAMESPACE, "1")
        .exec();
    Err(UserNamespaceError::Unshare(error))
}

/// Whether a process must enter a user namespace: not as root, and not
/// again from one that did not make it root (that would only loop).
fn must_enter(root: bool, inside_already: bool) -> Result<bool, UserNamespaceError> {
    match (root, inside_already) {
        (true, _) => Ok(false),
        (false, true) => Err(UserNamespaceError::NotRootInside),
        (false, false) => Ok(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_stays_and_a_user_enters_once() {
        assert!(!must_enter(true, false).unwrap());
        assert!(!must_enter(true, true).unwrap(), "root in the namespace entered");
        assert!(must_enter(false, false).unwrap());
        assert_eq!(
            must_enter(false, true).unwrap_err().to_string(),
            "the testbed needs root or a user namespace, and this user namespace is not root in itself"
        );
    }

    #[test]
    fn a_failure_to_enter_says_what_could_not_run() {
        let missing = || std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(
            UserNamespaceError::Unshare(missing()).to_string(),
            "the testbed needs root, or a user namespace of its own, and `unshare --user --map-root-user` could not \
             run: entity not found"
        );
        let no_binary = UserNamespaceError::NoBinary(missing());
        assert_eq!(no_binary.to_string(), "cannot find the scps binary");
        assert!(std::error::Error::source(&no_binary).is_some(), "with its cause");
    }
}
