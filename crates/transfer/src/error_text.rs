//! An error and its causes as one line for a user.
//!
//! Many of the libraries' errors name their cause in their own message
//! ("channel ...: cannot bind to device eth9: No such device") and also
//! expose it as their `source()`; anyhow's `{:#}` would then print the
//! cause twice. This prints each cause once.

/// `error`'s message, then each cause its message does not already
/// contain, separated by ": ".
pub fn error_text(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot bind to device eth9: {source}")]
    struct NamesItsSource {
        source: std::io::Error,
    }

    #[test]
    fn a_cause_the_message_already_names_is_not_repeated() {
        let cause = std::io::Error::from_raw_os_error(19);
        let error = anyhow::Error::new(NamesItsSource { source: cause }).context("channel 0");
        assert_eq!(format!("{error:#}").matches("No such device").count(), 2);
        assert_eq!(
            error_text(&error),
            "channel 0: cannot bind to device eth9: No such device (os error 19)"
        );
    }

    #[test]
    fn causes_the_message_does_not_name_are_all_given() {
        let error = anyhow::anyhow!("disk full")
            .context("writing report.json")
            .context("bench");
        assert_eq!(error_text(&error), "bench: writing report.json: disk full");
    }
}
