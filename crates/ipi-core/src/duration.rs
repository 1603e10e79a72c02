//! Durations on the command line, one form for every program: a number (decimals allowed)
//! and a unit, `ms`, `s`, `m` or `h`; a bare number is seconds (`--timeout 2`, `--timeout
//! 500ms`, `--redirect-interval 1.5s`). Configuration files keep their own formats (haproxy's
//! bare number is milliseconds, keepalived's seconds).

use std::time::Duration;

/// A command-line duration that is not one: the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a duration such as 2s, 500ms, 1.5s or 1m")]
pub struct DurationError(pub String);

/// Parses a command-line duration; zero, negative and unknown units are refused with a message
/// that says what is accepted (for clap's `value_parser`).
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    number
        .parse::<f64>()
        .ok()
        .map(|n| n * scale)
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| DurationError(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds() {
        assert_eq!(parse("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "0", "0s", "-1s", "2d", "s", "1.2.3s", "1e400"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
