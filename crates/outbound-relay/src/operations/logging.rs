//! The relay's logs: `tracing` to standard error, as text lines or one JSON object a line
//! (`log_format`), at the level `RUST_LOG` sets (default `info`).
//!
//! A client's text reaches some lines: the core names a refused field in its reason, a
//! refused origin is logged. So in text, every control character of a message or a field
//! (CR, LF, ESC, NUL, ... and the Unicode line separators and direction overrides) is written
//! escaped (`\n`, `\u{1b}`): no input can end a line, forge the next one or drive a terminal.
//! (A field name with CR LF once forged a whole `WARN ... admin token accepted` line.) JSON
//! lines are written by serde_json, which escapes them too: each line is valid JSON whatever
//! the input.

use crate::config::LogFormat;
use std::fmt::{self, Write as _};
use std::io::IsTerminal;
use tracing::field::Field;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format::{debug_fn, Writer};

/// Installs the subscriber for the process.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        LogFormat::Json => logs.json().flatten_event(true).init(),
        LogFormat::Text => logs
            .fmt_fields(debug_fn(field).delimited(" "))
            .with_ansi(std::io::stderr().is_terminal())
            .init(),
    }
}

/// One field of a text line: `name=value` (the message without its name), escaped.
fn field(w: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug) -> fmt::Result {
    if field.name() != "message" {
        write!(w, "{}=", field.name())?;
    }
    write!(Escaped(w), "{value:?}")
}

/// Writes through to `.0` with control characters escaped.
struct Escaped<'w, W: fmt::Write>(&'w mut W);

impl<W: fmt::Write> fmt::Write for Escaped<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some(at) = rest.find(needs_escape) {
            self.0.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().unwrap_or_default();
            match c {
                '\n' => self.0.write_str("\\n")?,
                '\r' => self.0.write_str("\\r")?,
                '\t' => self.0.write_str("\\t")?,
                c => write!(self.0, "\\u{{{:x}}}", c as u32)?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        self.0.write_str(rest)
    }
}

/// C0 and C1 controls and DEL, the Unicode line and paragraph separators, and the
/// bidirectional overrides and isolates (text that displays other than it reads).
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(s: &str) -> String {
        let mut out = String::new();
        write!(Escaped(&mut out), "{s}").unwrap();
        out
    }

    #[test]
    fn control_characters_are_written_escaped() {
        assert_eq!(
            escaped("a\r\nWARN forged\u{1b}[31m\0\u{7f}\u{85}\u{2028}\u{202e}\t é"),
            "a\\r\\nWARN forged\\u{1b}[31m\\u{0}\\u{7f}\\u{85}\\u{2028}\\u{202e}\\t é"
        );
        assert_eq!(escaped("plain text, ünïcode"), "plain text, ünïcode");
    }
}
