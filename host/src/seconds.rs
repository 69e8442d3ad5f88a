//! Durations a user gives in seconds (flags and environment variables): finite, positive and at
//! most a year, or refused with a message, never a panic in `Duration::from_secs_f64`.

use std::time::Duration;

/// The longest duration accepted: a year, well past any AWS operation's own limit.
pub const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// `text` as a duration in seconds (`2`, `0.5`), or why it is not one.
pub fn parse(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !seconds.is_finite() || seconds <= 0.0 || seconds > MAX_SECONDS {
        return Err(format!(
            "`{text}` seconds is out of range: give a finite number above 0 and at most {MAX_SECONDS}"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The duration in the environment variable `name`: `None` when unset, and when it is not a
/// valid duration (with a warning naming the variable, since the default is then used).
pub fn from_env(name: &str) -> Option<Duration> {
    let text = std::env::var(name).ok()?;
    parse(&text)
        .inspect_err(|reason| tracing::warn!("ignoring {name}: {reason}; using the default"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_positive_seconds_parse_and_everything_else_is_refused_with_a_reason() {
        assert_eq!(parse("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse(" 0.5 "), Ok(Duration::from_millis(500)));
        for bad in ["inf", "-inf", "NaN", "0", "-1", "1e300", "", "soon"] {
            let reason = parse(bad).unwrap_err();
            assert!(reason.contains(&format!("`{bad}`")), "{bad}: {reason}");
        }
    }
}
